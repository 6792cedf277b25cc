"""A choice of Claude Code CLI, resolved to the executable, its version and where it came from.

    bundled   the CLI claude-agent-sdk bundles (claude_agent_sdk/_bundled/claude)
    system    `claude` on PATH
    PATH      that executable (a choice with a / in it)
    VERSION   a release from the npm registry (2.1.300, or latest): the cached one, installed on first use

Nothing chosen is the default: what the SDK itself would run, the bundled CLI, else `claude` on PATH.  A CLI's version
is what it answers to `--version` (asked once per path), never read off its name or its folder.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, ours
from . import cache, npm

__tracebackhide__ = ours  # our errors show without our frames

ACCEPTED = "a version (2.1.300), latest, bundled, system, or the path of a claude executable (with a / in it)"
DEFAULT = "default"  # who chose the CLI when nobody did
_CHOOSE_ANOTHER = "or choose another CLI: --agent-cli VERSION (from the npm registry), bundled, system or a PATH"


@dataclass(frozen=True)
class Cli:
    """A Claude Code CLI to run: its executable, its version as it says, where it came from (bundled, system,
    cache (npm) or path) and who chose it (an option, a marker, the agent's code, or the default)."""

    path: str
    version: str
    source: str
    chosen_by: str = DEFAULT

    def describe(self) -> str:
        return f"Claude Code {self.version} ({self.source}) {self.path}, chosen by {self.chosen_by}"

    @property
    def choice(self) -> str:
        """The `--agent-cli` value that chooses this CLI again (a release by its version)."""
        return {"cache (npm)": self.version, "path": self.path}.get(self.source, self.source)


def choose(value: str, chosen_by: str) -> Cli:
    """The CLI `value` names (see the module docstring); a release not in the cache is installed, said in one line
    on stderr.  `chosen_by` names where the choice was made, for messages and reports."""
    path, source = _located(value.strip(), chosen_by)
    return Cli(path, version_of(path), source, chosen_by)


def default() -> Cli:
    """The CLI of an agent that chose none: the bundled one, else `claude` on PATH."""
    try:
        return choose("bundled", DEFAULT)
    except ConfigError as bundled_error:
        if shutil.which("claude") is None:
            raise bundled_error from None
    return choose("system", DEFAULT)


def bundled() -> str:
    """The path of the CLI claude-agent-sdk bundles (found without importing the SDK, which takes most of a second)."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "claude-agent-sdk is not installed, so there is no bundled Claude Code CLI.",
            hint=f"pip install 'pytest-controlplane[claude]' (it bundles the CLI), {_CHOOSE_ANOTHER}.",
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "_bundled" / "claude"
    if not path.is_file():
        raise ConfigError(
            f"claude-agent-sdk has no bundled CLI at {path}.",
            hint=f"Reinstall claude-agent-sdk from a platform wheel that bundles the CLI, {_CHOOSE_ANOTHER}.",
        )
    return str(path)


@functools.cache
def version_of(path: str) -> str:
    """The version the CLI at `path` says it is (`claude --version`: "2.1.332 (Claude Code)")."""
    try:
        said = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=60,
            env={**os.environ, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ConfigError(f"`{path} --version` failed: {error}.", hint=f"Fix it, {_CHOOSE_ANOTHER}.") from None
    found = npm.VERSION.search(said.stdout)
    if said.returncode != 0 or found is None:
        words = " ".join((said.stdout + said.stderr).split())[:200]
        raise ConfigError(
            f"{path} is not a Claude Code CLI: `{path} --version` exited {said.returncode} and said {words!r}.",
            hint=f"Point it at a claude executable, {_CHOOSE_ANOTHER}.",
        )
    return found.group(0)


def _located(value: str, chosen_by: str) -> tuple[str, str]:
    """The executable `value` names, and where it came from."""
    if value == "bundled":
        return bundled(), "bundled"
    if value == "system":
        found = shutil.which("claude")
        if found is None:
            raise ConfigError(
                f"{chosen_by} system: there is no `claude` on PATH.",
                hint=f"Install Claude Code (npm install -g @anthropic-ai/claude-code), {_CHOOSE_ANOTHER}.",
            )
        return found, "system"
    if value == "latest" or npm.VERSION.fullmatch(value):

        def announce(line: str) -> None:
            print(f"pytest-controlplane: {chosen_by} {value}: not cached yet, {line}", file=sys.stderr, flush=True)

        return str(cache.install(value, announce=announce)[0].path), "cache (npm)"
    if "/" in value:
        path = os.path.abspath(os.path.expanduser(value))
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise ConfigError(
                f"{chosen_by} {value}: there is no executable file at {path}.", hint=f"Fix the path, {_CHOOSE_ANOTHER}."
            )
        return path, "path"
    raise ConfigError(f"{chosen_by}: {value!r} is not {ACCEPTED}.")
