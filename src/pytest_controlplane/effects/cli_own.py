"""What the Claude Code CLI and its sandbox runtime write (and read) of their own in an agent's world: never the
agent's effect, nor a tool's source.

Told apart by place (its config dir, caches, sockets) and, for a file the user owns too, by content: the lines the
CLI adds to the user's global gitignore are its own, any other line is the agent's.  Those lines, and the commands
the CLI runs for itself, change from one release to another: they are kept in cli_facts.py (GITIGNORE_LINES,
HELPER_RUNS) with the releases they were measured on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..cli_facts import GITIGNORE_LINES, HELPER_RUNS
from .snapshot import absolute, under

# Inside the agent's config dir these are instructions to the agent, not its own bookkeeping:
# an agent that writes them is changing its own rules.
_CONTROL_FILES = ("settings.json", "settings.local.json", "CLAUDE.md", "agents", "commands", "skills", "hooks",
                  "output-styles")  # fmt: skip


def cli_helper(program: str, args: str, in_cli_group: bool) -> bool:
    """Whether a run of `program` with `args` that a shim logged is the CLI's own helper: in the CLI's process group
    (a tool's command never is: the CLI starts each in a group of its own) and one of the CLI's own commands."""
    found = HELPER_RUNS.get(program)
    return in_cli_group and found is not None and found.search(args) is not None


def cli_own_read(relative: str) -> bool:
    """Whether the CLI reads this workspace file (`relative` to it) for itself, whatever the task: its instructions
    and settings (CLAUDE.md in any folder, .claude/, .mcp.json).  Never the source of a tool's result."""
    parts = relative.split("/")
    return parts[-1] in ("CLAUDE.md", "CLAUDE.local.md") or parts[0] in (".claude", ".mcp.json")


def cli_own_tmp(name: str) -> bool:
    """Whether `name`, in the agent's TMPDIR, is the Claude Code CLI's own (its sockets, task folders) or its sandbox
    runtime's (srt-mux-*.sock: the proxy dials it for every connection): never the agent's effect, never removed."""
    return name == "cc-socks" or name.startswith(("claude-", "srt-"))


def world_bookkeeping(world: Any) -> tuple[Callable[[str], bool], dict[str, tuple[str, ...]]]:
    """For a World: which paths are the CLI's own state, and which files it appends its own lines to (see Effects)."""
    config, tmp, sessions = absolute(world.config_dir), absolute(world.tmp), absolute(world.session_store_dir)
    recorder = absolute(world.root / "hooks")  # the hook recorder's log and listener address (settings_hooks)
    home = absolute(world.home)
    # The CLI's own places in HOME, which it (and its sandbox runtime) uses whatever CLAUDE_CONFIG_DIR says.
    dot_claude = f"{home}/.claude"
    # its caches, its sandbox runtime's configuration, and the npm log its start-up writes
    caches = (f"{home}/.cache/claude", f"{home}/.cache/claude-cli-nodejs", f"{home}/.config/anthropic",
              f"{home}/.npm/_logs")  # fmt: skip

    def bookkeeping(path: str) -> bool:
        for own in (config, dot_claude):
            if under(path, own):
                first = path[len(own) :].lstrip("/").split("/", 1)[0]
                return first not in _CONTROL_FILES  # its state; the rules it obeys are the agent's to leave alone
        if path in (f"{home}/.cache", f"{home}/.config", f"{home}/.npm") or any(under(path, c) for c in caches):
            return True
        if under(path, tmp) and path != tmp:
            return cli_own_tmp(path[len(tmp) :].lstrip("/").split("/", 1)[0])
        return under(path, sessions) or under(path, recorder)  # a LoopAgent's session store; the hook log

    return bookkeeping, {f"{home}/.config/git/ignore": GITIGNORE_LINES}
