#!/usr/bin/env python3
"""PreToolUse guard, fixed after its audit: an allowlist instead of a list of bad spellings.

- The file tools may touch a path only once it is resolved (symlinks, `..`, `~`) to a file inside the project that is
  neither .env nor under secrets/, nor another name (a hardlink) of one of them.
- The shell may run only plain read-only commands (no redirection, chaining, substitution, variables, globs or
  interpreters), and none of their words may resolve to a protected file.
- Every other tool is refused, except ToolSearch (it loads tool schemas and runs nothing).
It still logs every call to logs/pre_tool_use.json.  Exit code 2 blocks the call; stderr goes to the model.
"""

import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(os.path.realpath(os.environ.get("CLAUDE_PROJECT_DIR", ".")))
FILE_TOOLS = {"Read": "file_path", "Write": "file_path", "Edit": "file_path", "NotebookEdit": "notebook_path",
              "Grep": "path", "Glob": "path"}
HARMLESS_TOOLS = {"ToolSearch"}
READ_ONLY = re.compile(r"(ls|cat|head|tail|wc|grep|git (status|log|diff))( [\w./=-]+)*")


def protected(path: str) -> bool:
    target = Path(os.path.realpath(ROOT / os.path.expanduser(path)))
    try:
        relative = target.relative_to(ROOT)
    except ValueError:
        return True  # outside the project
    if target.name.startswith(".env") or (relative.parts and relative.parts[0] == "secrets"):
        return True
    if target.is_dir():  # a folder that holds what is protected: a search there would reach it
        return (target / ".env").exists() or target == ROOT / "secrets" or (target / "secrets").exists()
    guarded = [ROOT / ".env", *(ROOT / "secrets").rglob("*")]
    return target.is_file() and any(p.is_file() and target.samefile(p) for p in guarded)


def refusal(tool: str, tool_input: dict) -> str:
    if tool in FILE_TOOLS:
        path = tool_input.get(FILE_TOOLS[tool]) or "."
        return f"{path} is protected" if protected(path) else ""
    if tool == "Bash":
        command = tool_input.get("command", "").strip()
        if not READ_ONLY.fullmatch(command):
            return "the shell may only run plain read-only commands"
        words = [w for w in command.split()[1:] if not w.startswith("-")]
        return "the shell may not read protected files" if any(protected(w) for w in words) else ""
    return "" if tool in HARMLESS_TOOLS else f"{tool} is not allowed here"


def log(data: dict) -> None:
    path = ROOT / "logs" / "pre_tool_use.json"
    path.parent.mkdir(exist_ok=True)
    entries = json.loads(path.read_text()) if path.exists() else []
    entries.append({"tool": data.get("tool_name"), "input": data.get("tool_input")})
    path.write_text(json.dumps(entries, indent=2))


def main() -> None:
    data = json.load(sys.stdin)
    log(data)
    why = refusal(data.get("tool_name", ""), data.get("tool_input") or {})
    if why:
        print(f"BLOCKED: {why}", file=sys.stderr)
        sys.exit(2)
    sys.exit(0)


if __name__ == "__main__":
    main()
