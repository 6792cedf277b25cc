"""An agent that investigates the project's cache module, on the reference loop and session store.

Its control plane is the one tool it has: `read_cache_file` reads files of the project only, and
redacts credentials from configuration files before the model sees them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

SYSTEM = "You review the cache module of this project. Read files with read_cache_file; answer briefly."
TOOLS = [{
    "name": "read_cache_file",
    "description": "Read a file of the project (cache.py, cache_config.ini, ...).",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}]
SECRET_LINE = re.compile(r"^(\s*[\w.-]*(token|secret|password|key)[\w.-]*\s*=).*$", re.IGNORECASE | re.MULTILINE)


def redact(text: str) -> str:
    return SECRET_LINE.sub(r"\1 <redacted>", text)


def make_tools(project: Path) -> dict[str, Any]:
    root = project.resolve()

    def read_cache_file(path: str) -> str:
        target = (root / path).resolve()
        if root not in target.parents or not target.is_file():
            raise FileNotFoundError(f"{path} is not a file of the project")
        content = target.read_text()
        return redact(content) if target.suffix in (".ini", ".cfg", ".toml", ".env") else content

    return {"read_cache_file": read_cache_file}


def loop_options(project: Path) -> dict[str, Any]:
    """Keyword arguments for run_agentic_loop / resume_session."""
    return {"system": SYSTEM, "tools": TOOLS, "tool_impls": make_tools(project)}
