"""What a warm pool is keyed by: what a running Claude Code CLI is fixed to once it has started (agents/warm.py).

A pool serves the variants whose agent has the same fixed options (everything but the callbacks, the permission mode
and one session's ids), the same answer at the approval prompt, and a workspace template with the same agent
configuration (the CLI reads it when it starts) and the same layout (its sandbox protects what it finds then: a pool
started in a git repository kept `.git/hooks` read-only for a template that has no `.git`, where a cold run writes it).
Two CLIs (`--agent-cli`, `ClaudeAgent(cli=...)`) never share a pool: the key names the CLI's path and version.
A pool is also one trust view's (`--workspace-trust`, agents/world.py `seed_trust`): measured on CLI 2.1.332, a running
CLI keeps the trust in its workspace that it started with (trust written into or taken out of `.claude.json` between
two sessions changed none of its answers), so owner and clone never share a CLI.  Its workspace's path is the same
for every test, so the entry `.claude.json` keeps between tests (warm.py `_CONFIG_KEPT`) still names it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Any

# Agent configuration in a workspace: the CLI reads it when it starts, so a pool is made for one set of it.
CONFIGURATION = (".claude", ".mcp.json", "CLAUDE.md", "CLAUDE.local.md")
# How deep the sandbox looks for git repositories and settings files to protect (its mandatoryDenySearchDepth).
_SEARCH_DEPTH = 3


def fingerprint(options: Any) -> str:
    """The fixed part of a ClaudeAgentOptions, which a running CLI cannot change: everything but the callbacks, the
    permission mode and the ids of one session; hooks by their events and matchers."""
    fields = {}
    for field in dataclasses.fields(options):
        value = getattr(options, field.name)
        if field.name in ("can_use_tool", "stderr", "permission_mode", "session_id", "resume", "fork_session", "cwd"):
            value = value is not None if field.name == "can_use_tool" else None
        elif field.name == "hooks":
            value = sorted(
                (event, [(m.matcher, len(m.hooks)) for m in matchers]) for event, matchers in (value or {}).items()
            )
        elif field.name == "mcp_servers" and isinstance(value, dict):
            value = sorted((name, _server(server)) for name, server in value.items())
        fields[field.name] = value
    return hashlib.sha256(repr(sorted(fields.items(), key=lambda item: item[0])).encode()).hexdigest()


def key(agent: Any, workspace: Path) -> str:
    """What a running CLI of `agent` is fixed to: the options' fixed part, the answer at its approval prompt (a CLI
    started without a can_use_tool refuses what it would ask), and the CLI itself, by its path and version."""
    options = agent.options_factory(workspace)
    cli = agent.chosen_cli(options)
    return f"{fingerprint(options)}:{agent.approval}:{cli.path}:{cli.version}"


def _server(server: Any) -> Any:
    """An MCP server as its kind and configuration (an SDK server is an object made anew by each options call)."""
    return sorted(server) if isinstance(server, dict) else type(server).__name__


def configuration(template: Path | None) -> str:
    """The agent configuration a template holds (what the CLI reads at start, its files' execute bits with them) and
    its layout (what its sandbox protects from then on), as a digest."""
    digest = hashlib.sha256()
    if template is not None:
        digest.update("\0".join(_layout(template, _SEARCH_DEPTH)).encode() + b"\0\0")
        for relative, data in configuration_files(template).items():
            path = template / relative  # its execute bits too: a hook script that lost them fails to start
            runs = oct(path.stat().st_mode & 0o111) if not path.is_symlink() else "link"
            digest.update(str(relative).encode() + b"\0" + data + b"\0" + runs.encode() + b"\0")
    return digest.hexdigest()


def configuration_files(folder: Path) -> dict[Path, bytes]:
    """The agent configuration in `folder`, by path relative to it: a file by its bytes, a symlink by its target
    (never followed: a variant may point one anywhere)."""
    found = {}
    for name in CONFIGURATION:
        path = folder / name
        inside = sorted(path.rglob("*")) if path.is_dir() and not path.is_symlink() else [path]
        for entry in inside:
            if entry.is_symlink():
                found[entry.relative_to(folder)] = b"-> " + os.readlink(entry).encode()
            elif entry.is_file():
                found[entry.relative_to(folder)] = entry.read_bytes()
    return found


def _layout(folder: Path, depth: int, prefix: str = "") -> list[str]:
    """The names under `folder`, `depth` levels down, folders marked with a slash."""
    names = []
    for entry in sorted(folder.iterdir()):
        is_dir = entry.is_dir() and not entry.is_symlink()
        names.append(prefix + entry.name + ("/" if is_dir else ""))
        if is_dir and depth > 1:
            names.extend(_layout(entry, depth - 1, f"{prefix}{entry.name}/"))
    return names
