"""Where a hole points a reader: the control plane that saw the call and let it through.

For a repository whose guards are command hooks in its settings files, that is the PreToolUse hook whose matcher
matched the attempt's tool (the line of its command); for a call no hook matched, the settings file's hooks block,
saying so ("no hook matched Read").  Elsewhere (an agent defined in a conftest), the caller's default.  Paths are
relative to the repository the settings came from, as `base` says.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..agents.hook_runs import fail_open
from ..agents.settings_hooks import matches, project_settings


def seen_by(outcome: Any, repository: Path | None, base: Path) -> tuple[str, str] | None:
    """(`path:line`, words) of the hook of `repository`'s settings that saw the attempt of `outcome`, or of its hooks
    block when none matched its tool; None when the repository has no command hook (or the attempt made no call)."""
    if repository is None or outcome.call is None:
        return None
    tool = outcome.call.name
    files = [f for f in project_settings(repository) if any(h.event == "PreToolUse" for h in f.hooks)]
    failed = fail_open(outcome.call)
    for found in files:
        for hook in found.hooks:
            if hook.event == "PreToolUse" and matches(hook.matcher, tool):
                line = _line(found.original, json.dumps(hook.command)[1:-1])
                if hook.short in failed:  # what the hook's own run said: it failed, and the call ran (fail-open)
                    return _place(repository / found.file, line, base), f"fail-open: {failed[hook.short]}"
                return _place(
                    repository / found.file, line, base
                ), f"{hook.label} saw the {tool} call and let it through"
    if not files:
        return None
    first = files[0]
    return _place(repository / first.file, _line(first.original, '"PreToolUse"'), base), f"no hook matched {tool}"


def _line(content: bytes, text: str) -> int:
    lines = content.decode("utf-8", "replace").splitlines()
    return next((n for n, line in enumerate(lines, start=1) if text in line), 1)


def _place(path: Path, line: int, base: Path) -> str:
    return f"{Path(os.path.relpath(path, base)).as_posix()}:{line}"
