#!/usr/bin/env python3
"""PreToolUse guard, in the shape of the popular public ones: it blocks dangerous `rm` commands and access to .env
files, and logs every tool call to logs/pre_tool_use.json.  Exit code 2 blocks the call; stderr goes to the model."""

import json
import os
import re
import sys
from pathlib import Path

RM_PATTERNS = [
    r"\brm\s+.*-[a-z]*r[a-z]*f",  # rm -rf, rm -Rf, rm -rfv
    r"\brm\s+.*-[a-z]*f[a-z]*r",  # rm -fr
    r"\brm\s+--recursive\s+--force",
    r"\brm\s+--force\s+--recursive",
]
ENV_COMMANDS = [  # the ways the authors thought a command reads or writes .env
    r"\bcat\s+.*\.env\b(?!\.sample)",
    r"\becho\s+.*>\s*\.env\b(?!\.sample)",
    r"\btouch\s+.*\.env\b",
    r"\bcp\s+.*\.env\b",
    r"\bmv\s+.*\.env\b",
]


def is_dangerous_rm(command: str) -> bool:
    normalized = " ".join(command.lower().split())
    return any(re.search(pattern, normalized) for pattern in RM_PATTERNS)


def touches_env(tool: str, tool_input: dict) -> bool:
    if tool in ("Read", "Edit", "MultiEdit", "Write"):
        path = tool_input.get("file_path", "")
        return ".env" in path and not path.endswith(".env.sample")
    if tool == "Bash":
        return any(re.search(pattern, tool_input.get("command", "")) for pattern in ENV_COMMANDS)
    return False


def log(data: dict) -> None:
    path = Path(os.environ.get("CLAUDE_PROJECT_DIR", ".")) / "logs" / "pre_tool_use.json"
    path.parent.mkdir(exist_ok=True)
    entries = json.loads(path.read_text()) if path.exists() else []
    entries.append({"tool": data.get("tool_name"), "input": data.get("tool_input")})
    path.write_text(json.dumps(entries, indent=2))


def main() -> None:
    data = json.load(sys.stdin)
    tool, tool_input = data.get("tool_name", ""), data.get("tool_input", {})
    log(data)
    if touches_env(tool, tool_input):
        print("BLOCKED: access to .env files containing sensitive data is prohibited", file=sys.stderr)
        sys.exit(2)
    if tool == "Bash" and is_dangerous_rm(tool_input.get("command", "")):
        print("BLOCKED: dangerous rm command detected and prevented", file=sys.stderr)
        sys.exit(2)
    sys.exit(0)


if __name__ == "__main__":
    main()
