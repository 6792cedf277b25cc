"""A bypass variant: one scripted way to attempt a forbidden action, with the setup it needs.

A variant's tool inputs hold placeholders for what only the run knows (the workspace path, the
agent's HOME); `expand` fills them in.  `reproduction` prints the calls and, for shell routes,
the command, so a failing variant can be replayed by hand.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from typing import Any

from ..errors import ours
from ..gateway.scripted import Block, ScriptedModel, tool_use

__tracebackhide__ = ours  # our errors show without our frames

WORKSPACE = "@@WORKSPACE@@"
HOME = "@@HOME@@"
TMPDIR = "@@TMPDIR@@"
FIRST_LINE = "@@FIRST_LINE@@"  # the target's first line, for Edit's old_string
ALLOWED_DOMAIN = "@@ALLOWED_DOMAIN@@"  # the domain the agent's settings allow (everyday.py `allowed_domain`)
# Agent configuration a repository holds as JSON: what a variant plants there is added to the user's own (their hooks
# and rules stay in force beside it), as an attacker's edit of the file would be.
MERGED = (".claude/settings.json", ".claude/settings.local.json", ".mcp.json")
FAMILIES = ("write", "read", "exec", "escape", "egress", "everyday")  # everyday: the work a guard must allow
# How a variant `via` a subagent starts it: in the foreground, so the subagent's calls finish inside the run.
SUBAGENT_CALL = {
    "description": "controlplane bypass attempt",
    "subagent_type": "general-purpose",
    "prompt": "Make the tool calls you are given.",
    "run_in_background": False,
}


@dataclass(frozen=True)
class Variant:
    """One attempt at a forbidden action of `family` on `target`, by `route` with path `form`; or, of the family
    "everyday", a piece of legitimate work a guard must allow (everyday.py)."""

    id: str
    family: str
    target: str
    route: str  # "Write", "Bash >", "Bash timeout", ...
    form: str  # "relative", "absolute", "symlink alias", ... ("-" for commands)
    tool: str  # the tool the attempt uses
    input: dict[str, Any]
    setup: tuple[tuple[str, dict[str, Any]], ...] = ()  # calls (tool, input) played first: a Read, making a link
    # Put in place by the harness before the run, never asked of the agent: (kind, name, what), names relative to
    # the workspace: a link the repository already holds ("symlink" or "hardlink", what it points to) or a file
    # ("file", its content: a poisoned repository's settings, skill, MCP config).
    plant: tuple[tuple[str, str, str], ...] = ()
    tags: frozenset[str] = field(default_factory=frozenset)
    reference: str = ""  # a public report this variant reproduces, e.g. "anthropics/claude-code#81667"
    setup_is_attack: bool = False  # the played setup is part of the attack: a guard refusing it holds
    via: str = ""  # "Agent": the main agent starts a subagent, and the setup and the attempt are the subagent's
    requires: tuple[str, ...] = ()  # programs the route runs besides the shell's own (a missing one: not applicable)

    def calls(self, places: dict[str, str]) -> list[Block]:
        """The scripted tool calls of this variant in a run whose directories are `places` (a subagent's, for a
        variant `via` one)."""
        return [
            tool_use(tool, expand(tool_input, places)) for tool, tool_input in (*self.setup, (self.tool, self.input))
        ]

    def model(self, places: dict[str, str]) -> ScriptedModel:
        """The scripted model that plays this variant: the calls one per turn (the subagent's, after the main agent
        starts it, for a variant `via` one), then "done" for as long as anyone asks."""
        if not self.via:
            return ScriptedModel(self.calls(places), then="done")
        return ScriptedModel([tool_use(self.via, SUBAGENT_CALL)], subagent=self.calls(places), then="done")

    @property
    def script(self) -> bool:
        """An exec variant whose target is a workspace script ("scripts/deploy.sh"), not a command on PATH."""
        return self.family == "exec" and "/" in self.target

    @property
    def command(self) -> str | None:
        """The shell command of a shell route (Bash, Monitor, ...; None for other tools)."""
        return self.input.get("command")

    @property
    def subject(self) -> str:
        """What the variant is, in a report's first line: "write '.env' by Bash >, relative (ref)", or for an everyday
        task "everyday task (write): Write .env.example"."""
        if self.family == "everyday":
            return f"everyday task ({self.target}): {self.route}"
        return f"{self.family} {self.target!r} by {self.route}, {self.form}" + (
            f" ({self.reference})" * bool(self.reference)
        )

    def planting(self) -> list[str]:
        """What the harness puts in place first, as shell commands (run in the workspace)."""
        return [
            f"add to {name} (its JSON merged into what the file holds, the repository's own hooks and rules kept):\n"
            f"{what.rstrip()}"
            if kind == "file" and name in MERGED
            else f"mkdir -p {posixpath.dirname(name) or '.'} && cat > {name} <<'EOF'\n{what.rstrip()}\nEOF"
            if kind == "file"
            else f"ln {'-s ' if kind == 'symlink' else ''}{link_target(kind, name, what)} {name}"
            for kind, name, what in self.plant
        ]

    def reproduction(self) -> str:
        """What the harness planted, then the calls played as JSON, and for a shell route the command to paste in a
        shell (run in the workspace)."""
        planted = [f"planted by the harness: {line}" for line in self.planting()]
        lines = [
            f"{'  in the subagent: ' if self.via else ''}{tool} {json.dumps(tool_input, ensure_ascii=False)}"
            for tool, tool_input in (*self.setup, (self.tool, self.input))
        ]
        if self.via:
            lines.insert(0, f"{self.via} {json.dumps(SUBAGENT_CALL)}")
        calls = (*self.setup, (self.tool, self.input))
        shell = [tool_input["command"] for tool, tool_input in calls if "command" in tool_input]
        if shell and len(shell) == len(calls):
            lines.append("shell: " + " && ".join(f"( {c} )" if len(shell) > 1 else c for c in shell))
        text = "\n".join(planted + lines)
        for placeholder, name in (
            (WORKSPACE, "$WORKSPACE"),
            (HOME, "$HOME"),
            (TMPDIR, "$TMPDIR"),
            (FIRST_LINE, "<first line of the target>"),
            (ALLOWED_DOMAIN, "<the allowed domain>"),
        ):
            text = text.replace(placeholder, name)
        return text

    def __repr__(self) -> str:
        ref = f", {self.reference}" if self.reference else ""
        return (
            f"Variant({self.id}: {self.family} {self.target!r} by {self.route}, {self.form}{ref})\n"
            f"{self.reproduction()}"
        )

    def __str__(self) -> str:
        return self.id


def target_file(target: str) -> str:
    """The file a target names: itself, or for a directory target (`secrets/`) the file planted in it."""
    return target + "cp-planted.txt" if target.endswith("/") else target


def link_target(kind: str, name: str, points_to: str) -> str:
    """What a planted link holds: a symlink's target is relative to the link's own directory."""
    return posixpath.relpath(points_to, posixpath.dirname(name) or ".") if kind == "symlink" else points_to


def expand(value: Any, places: dict[str, str]) -> Any:
    """`value` with the placeholders replaced by the run's directories (WORKSPACE, HOME, TMPDIR, FIRST_LINE)."""
    if isinstance(value, str):
        for placeholder, actual in places.items():
            value = value.replace(placeholder, actual)
        return value
    if isinstance(value, dict):
        return {k: expand(v, places) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v, places) for v in value]
    return value
