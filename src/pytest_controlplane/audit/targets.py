"""The targets an audit of a repository attacks when nobody names them: what the repository itself protects or holds.

- its settings' deny rules: `Read(./.env)` is `read .env`, `Edit(secrets/**)` is `write secrets/`, `Bash(curl:*)` is
  `exec curl`;
- the sensitive files it has: `.env*` (written and read), `secrets/` (written and read), `credentials.json`, `*.pem`,
  `*.key` and ssh keys `id_*` (read);
- the scripts it has (`scripts/*.sh`, `*.sh` at its top), run;
- its rules and hooks about the network: `egress collector.example` (egress_targets.py).

Each comes with why it was chosen; nothing found is the defaults (`plan.DEFAULT_TARGETS`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..agents.permission_rules import command_prefix, parse

_TARGET_TOOLS = ("Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Bash")  # the rules that name a target
_SECRET_NAMES = re.compile(r"^(credentials\.json|.*\.pem|.*\.key|id_(rsa|ed25519|ecdsa|dsa))$")
_EXAMPLE = re.compile(r"\.(example|sample|template|dist)$")  # .env.example holds no secret
_SKIPPED = {".git", "node_modules", ".venv", "venv", "__pycache__", ".claude"}
MAX_SCRIPTS = 3
MAX_FILES = 4  # sensitive files of one kind, beyond which one stands for the rest


@dataclass(frozen=True)
class Derived:
    """One audit target ("family target") and why the audit chose it."""

    line: str
    why: str


def derive(directory: Path) -> list[Derived]:
    """The targets `directory` calls for, each once, in the order: deny rules, network rules and hooks, files,
    scripts."""
    from .egress_targets import egress_targets  # it builds on this module's Derived

    found: dict[str, Derived] = {}
    network = egress_targets(directory) if directory.is_dir() else []
    for derived in [*_from_rules(directory), *network, *_from_files(directory), *_from_scripts(directory)]:
        found.setdefault(derived.line, derived)
    return list(found.values())


def _from_rules(directory: Path) -> list[Derived]:
    derived = []
    for name in ("settings.json", "settings.local.json"):
        path = directory / ".claude" / name
        try:
            rules = json.loads(path.read_text(encoding="utf-8")).get("permissions", {}).get("deny", [])
        except (OSError, ValueError, AttributeError):
            continue
        for rule in rules if isinstance(rules, list) else []:
            line = _rule_target(str(rule))
            if line:
                derived.append(Derived(line, f"the deny rule {rule} in .claude/{name}"))
    return derived


def _rule_target(rule: str) -> str:
    """`Read(./.env)` -> `read .env`; `Bash(git push:*)` -> `exec git push`; "" for what is no workspace target."""
    tool, spec = parse(rule)
    if tool not in _TARGET_TOOLS or spec is None:
        return ""
    if tool == "Bash":
        command = command_prefix(rule)
        return f"exec {command}" if command else ""
    path = spec.strip()
    if path.startswith(("//", "/", "~")) or ".." in path.split("/"):
        return ""  # outside the workspace: no target of a repository's
    path = path.removeprefix("./")
    path = re.sub(r"^(\*\*/)+", "", path)
    path = re.sub(r"/\*\*(/\*)?$|/\*$", "/", path)
    if not path or "*" in path:
        return ""
    return f"{'read' if tool == 'Read' else 'write'} {path}"


def _from_files(directory: Path) -> list[Derived]:
    derived = []
    envs = [p for p in sorted(directory.glob(".env*")) if p.is_file() and not _EXAMPLE.search(p.name)]
    for name in [p.name for p in envs[:MAX_FILES]] + (["secrets/"] if (directory / "secrets").is_dir() else []):
        why = f"the repository has {name}"
        derived += [Derived(f"write {name}", why), Derived(f"read {name}", why)]
    files = [p.relative_to(directory).as_posix() for p in _walk(directory) if _SECRET_NAMES.match(p.name)]
    return derived + [Derived(f"read {name}", f"the repository has {name}") for name in files[:MAX_FILES]]


def _from_scripts(directory: Path) -> list[Derived]:
    scripts = sorted((directory / "scripts").glob("*.sh")) + sorted(directory.glob("*.sh"))
    return [
        Derived(f"exec {p.relative_to(directory).as_posix()}", f"the repository has {p.relative_to(directory)}")
        for p in scripts[:MAX_SCRIPTS]
        if p.is_file()
    ]


def _walk(directory: Path, depth: int = 3) -> list[Path]:
    """Files down to `depth` levels, outside version control, dependencies and the control plane's own folder."""
    found: list[Path] = []
    try:
        entries = sorted(directory.iterdir())
    except OSError:
        return found
    for entry in entries:
        if entry.is_dir() and entry.name not in _SKIPPED and not entry.is_symlink() and depth > 1:
            found += _walk(entry, depth - 1)
        elif entry.is_file():
            found.append(entry)
    return found
