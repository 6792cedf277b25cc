"""What a command hook needs to start, read from its command and its script, and whether this machine has it.

A hook that cannot start is not a guard: the Claude Code CLI takes its failure (exit 127, `jq: not found`) for a
non-blocking error and runs the call (tests/test_hook_faults.py pins it).  The audit's header names, before any item
runs, each hook that would fail so here.

    needs(hook, directory)   ["node"], ["bash", "jq"], ["python3"]: its interpreter (the command's first word, or the
                             script's `#!`), then the programs its script runs that a CI image may lack
    needs_lines(directory, hooks)  the header's words: each hook's needs, and those not on PATH
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

from .settings_hooks import CommandHook

# Programs a hook is written in or calls that a CI image may lack (a shell's own builtins and coreutils never are).
PROGRAMS = ("jq", "yq", "node", "deno", "bun", "npx", "python3", "python", "uv", "ruby", "perl", "bash", "zsh", "php")
_WORD = re.compile(rf"(?<![\w./-])({'|'.join(map(re.escape, PROGRAMS))})(?![\w.-])")
MAX_SCRIPT = 100_000  # characters of a script read


def needs(hook: CommandHook, directory: Path) -> list[str]:
    """The programs `hook` needs to start and run, in the order met (see the module docstring)."""
    words = command_words(hook.command, directory)
    found: list[str] = []
    if words and Path(words[0]).name in PROGRAMS:
        found.append(Path(words[0]).name)
    for word in words:
        script = script_in(word, directory)
        if script is None:
            continue
        text = script.read_text(encoding="utf-8", errors="replace")[:MAX_SCRIPT]
        first, _, body = text.partition("\n")
        if first.startswith("#!"):
            shebang = first[2:].split()
            program = shebang[1] if shebang and Path(shebang[0]).name == "env" and len(shebang) > 1 else ""
            found.append(Path(program or (shebang[0] if shebang else "")).name)
        code = "\n".join(line for line in body.splitlines() if not line.lstrip().startswith(("#", "//")))
        found += [m.group(1) for m in _WORD.finditer(code)]
    return [name for name in dict.fromkeys(found) if name in PROGRAMS]


def command_words(command: str, directory: Path) -> list[str]:
    """A hook command's words, `$CLAUDE_PROJECT_DIR` made `directory` (as the CLI runs it there)."""
    expanded = re.sub(r"\$\{?CLAUDE_PROJECT_DIR\}?", str(directory.resolve()), command)
    try:
        return shlex.split(expanded)
    except ValueError:
        return expanded.split()


def script_in(word: str, directory: Path) -> Path | None:
    """The file a command word names inside `directory`, if any."""
    path = Path(word) if os.path.isabs(word) else directory / word
    try:
        inside = path.resolve().is_relative_to(directory.resolve()) and path.is_file()
    except OSError:
        return None
    return path if inside else None


def needs_lines(directory: Path, hooks: list[CommandHook]) -> list[str]:
    """The audit header's words on each hook: `hook `x` needs bash, jq: here` or, when one is missing, that it cannot
    start here and every call it guards runs."""
    lines = []
    for hook in hooks:
        wanted = needs(hook, directory)
        if not wanted:
            continue
        absent = [name for name in wanted if shutil.which(name) is None]
        said = f"hook `{hook.short}` needs {', '.join(wanted)}"
        lines.append(
            f"{said}: {', '.join(absent)} not installed here: it cannot start, and the CLI runs every call it guards "
            "(fail-open)"
            if absent
            else f"{said}: all installed here"
        )
    return lines
