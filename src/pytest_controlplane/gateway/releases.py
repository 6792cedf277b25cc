"""A cassette replayed on another Claude Code CLI release than it was recorded on.

Each release sends its own system prompt and tool descriptions, so its requests never equal the recorded ones.  When
the user chose the CLI that runs (`--agent-cli`, `$CONTROLPLANE_CLI`, the ini option, the marker, `ClaudeAgent(cli=)`
or the options' `cli_path`), the agent says so in a header of each request (`CHOSEN_BY_HEADER`, set through the CLI's
ANTHROPIC_CUSTOM_HEADERS) and the replay matches on the conversation alone (`cassette.matching.across_key`); the
default CLI of another release fails `CassetteVersionMismatch`, naming every way out.
"""

from __future__ import annotations

from pathlib import Path

from ..cli_facts import BUNDLED_BY_SDK, pin_advice
from ..errors import CassetteVersionMismatch, ours
from ..wire import CHOSEN_BY_HEADER, ModelRequest

__tracebackhide__ = ours  # our errors show without our frames

ACROSS_RELEASES = "replayed across CLI releases"  # an exchange's note starts so (report.data counts them)


def releases(recorded: object, request: ModelRequest) -> tuple[str, str] | None:
    """(recorded, running) when the request comes from another CLI release than the cassette's, else None."""
    running = request.claude_cli_version
    if isinstance(recorded, str) and recorded and running and recorded != running:
        return recorded, running
    return None


def chosen_by(request: ModelRequest) -> str:
    """Who chose the CLI that sent `request` ("" when nobody did: the default CLI)."""
    return request.header(CHOSEN_BY_HEADER).strip()


def note(recorded: str, running: str) -> str:
    return f"{ACROSS_RELEASES} (recorded on {recorded}, running {running})"


def mismatch(path: Path, recorded: str, request: ModelRequest, record_command: str) -> CassetteVersionMismatch:
    """The default CLI is another release than the recording's: every fix, the last one replaying on it."""
    running = request.claude_cli_version
    bundled = BUNDLED_BY_SDK.get(request.agent_sdk_version or "") == running
    return CassetteVersionMismatch(
        f"Cassette {path} was recorded with Claude Code CLI {recorded}, but this run uses CLI {running}; its prompts "
        "differ, so its requests cannot match.",
        path=path,
        hint=f"Re-record it: {record_command} — or, to replay it as it is, {pin_advice(recorded)}.\n"
        f"Or replay its recorded answers on CLI {running}, matched by conversation: --agent-cli {running}"
        + (" (or bundled: the same CLI, nothing to install)." if bundled else "."),
    )


def miss_hint(recorded: str, running: str, request: ModelRequest, record_command: str) -> str:
    """What to do when a request of a cross-release replay matches nothing."""
    return (
        f"Replayed across CLI releases (recorded on {recorded}, running {running}, chosen by {chosen_by(request)}): "
        f"the conversation itself differs. Re-record it on {running}, chosen the same way: {record_command} — or run "
        f"the release it was recorded on: --agent-cli {recorded}."
    )
