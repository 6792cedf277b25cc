"""What a settings file holds beyond hooks and permission rules: its `sandbox` block in one line, and the plugins
`enabledPlugins` turns on whose hooks the repository does not hold (the audit's CLI, in a world of its own, has none
of them), as the audit's header says them; and the permission mode the settings start the CLI in."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .settings_hooks import SettingsFile


def sandbox_words(block: dict[str, Any]) -> str:
    """A `sandbox` block in one line: `enabled, excludedCommands: docker, allowUnsandboxedCommands: false,
    network.allowedDomains: github.com, filesystem.denyRead: ~/.ssh`; every key said, nested ones by their path."""
    words = []
    for key, value in block.items():
        if key == "enabled":
            words.append("enabled" if value else "not enabled")
        elif isinstance(value, dict):
            words += [f"{key}.{inner}: {_value(item)}" for inner, item in value.items()]
        else:
            words.append(f"{key}: {_value(value)}")
    return ", ".join(words) or "empty"


def _value(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(map(str, value)) or "none"
    return json.dumps(value) if isinstance(value, bool) else str(value)


def unaudited_plugins(directory: Path, found: list[SettingsFile]) -> list[str]:
    """`plugin X: install it, or its hooks are not audited` for each plugin the settings enable whose
    `hooks/hooks.json` is nowhere in `directory` (a marketplace's plugin lives outside the repository: the audit's
    CLI, in a world of its own, has none of it)."""
    present = {p.parent.parent.name for p in _plugin_hooks(directory)}
    named = dict.fromkeys(name for settings in found for name in settings.plugins)
    return [
        f"plugin {name}: install it, or its hooks are not audited"
        for name in named
        if name.split("@", 1)[0] not in present
    ]


def _plugin_hooks(directory: Path, depth: int = 4) -> list[Path]:
    """The `<plugin>/hooks/hooks.json` files in `directory`, down to `depth` levels (not in .git or node_modules)."""
    found = []
    for path in directory.glob("hooks/hooks.json"):
        found.append(path)
    if depth > 0:
        for child in sorted(directory.iterdir()) if directory.is_dir() else []:
            if child.is_dir() and not child.is_symlink() and child.name not in (".git", "node_modules"):
                found += _plugin_hooks(child, depth - 1)
    return found


def configured_mode(workspace: Path, config_dir: Path | None = None, sources: Collection[str] | None = None) -> str:
    """The permission mode a CLI started without one begins in: the `permissions.defaultMode` of the settings it
    loads (`sources`: None for all; local over project over user), else the CLI's own `default`."""
    from .settings_hooks import WORKSPACE_FILES  # it imports this module

    mode = "default"
    files = [("user", config_dir / "settings.json" if config_dir else None)]
    files += [(source, workspace / name) for source, name in WORKSPACE_FILES.items()]  # project, then local
    for source, path in files:
        if path is None or (sources is not None and source not in sources):
            continue
        try:
            chosen = json.loads(path.read_text(encoding="utf-8")).get("permissions", {}).get("defaultMode")
        except (OSError, ValueError, AttributeError):
            continue
        mode = chosen if isinstance(chosen, str) and chosen else mode
    return mode
