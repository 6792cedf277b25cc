"""A cassette's recorded answers read strictly (`answers.read`), each flaw said with its interaction, its line and
the fix: what replay refuses before the agent runs, and what `controlplane cassettes check` lists.

Only the Messages API's answers (200 on ``/v1/messages``) are read as such; any other recorded body must at least
decode (a cassette of another tool may hold other routes, and errors are replayed as they came).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import answers
from ..codings import UndecodableBody, decoded_response, header
from ..errors import CassetteCorrupt

if TYPE_CHECKING:
    from .store import Cassette

SHOWN = 8  # flaws named in one error; `controlplane cassettes check` lists them all
DEFAULT_DIR = Path("cassettes")  # the plugin's cassette directory, seen from the rootdir


def flaws(cassette: Cassette) -> list[tuple[int, answers.Flaw]]:
    """(interaction number, flaw) for everything malformed in the cassette's recorded responses."""
    found: list[tuple[int, answers.Flaw]] = []
    for number, interaction in enumerate(cassette.interactions):
        response = interaction.response
        if interaction.route.endswith("/v1/messages") and response["status"]["code"] == 200:
            found += [(number, flaw) for flaw in answers.read(response, streamed=interaction.streamed).flaws]
            continue
        try:
            decoded_response(response)
        except UndecodableBody as error:
            found.append((number, answers.Flaw(0, "", f"it cannot be decoded: {error}")))
    return found


def describe(cassette: Cassette, number: int, flaw: answers.Flaw) -> str:
    """Where the flaw is and what is wrong, e.g. "interaction #2, line 7 of its response body: the data is not JSON
    (...): `data: {...`"."""
    coding = header(cassette.interactions[number].response.get("headers") or {}, "content-encoding")
    body = "response body" + (f" (decoded from {coding})" if coding and flaw.line else "")
    where = f"line {flaw.line} of its {body}" if flaw.line else f"its {body}"
    return f"interaction #{number}, {where}: {flaw.what}" + (f": `{flaw.text}`" if flaw.text else "")


def fix(cassette: Cassette, numbers: list[int], record_command: str) -> str:
    """What to do about flawed interactions `numbers`: restore, record again, or repair by hand."""
    which = ", ".join(f"#{number}" for number in sorted(set(numbers)))
    return (
        f"Restore it (`git checkout -- {cassette.path}`), record it again: {record_command} — or repair "
        f"interaction(s) {which} by hand where named (or delete them) until `controlplane cassettes check "
        f"{cassette.path}` is quiet."
    )


def refuse(cassette: Cassette, record_command: str) -> None:
    """Raise CassetteCorrupt naming the flaws, when the cassette has any: replay would hand the agent a broken
    answer, and the agent's reaction to it (a crash, a retry that misses) would hide the cause."""
    found = flaws(cassette)
    if not found:
        return
    named = [describe(cassette, number, flaw) for number, flaw in found[:SHOWN]]
    more = (
        [f"… and {len(found) - SHOWN} more (`controlplane cassettes check` lists them)"] if len(found) > SHOWN else []
    )
    raise CassetteCorrupt(
        f"Cassette {cassette.path} holds a malformed recorded answer, so replay stops before the agent runs:\n"
        + "\n".join(f"  {line}" for line in named + more),
        path=cassette.path,
        hint=fix(cassette, [number for number, _ in found], record_command),
    )


def record_command(path: Path) -> str:
    """The command that records `path` again: its test's node id when it lies under ./cassettes (the plugin's naming
    rule, `cassettes/<test module>/<test name>.yaml`, from the rootdir); said in words otherwise."""
    try:
        module = path.resolve().parent.relative_to(DEFAULT_DIR.resolve())
    except ValueError:
        return "run the test that plays it with `pytest --agent-mode=record`"
    return f"pytest --agent-mode=record '{module.as_posix()}.py::{path.stem}'"


def findings(cassette: Cassette) -> list[dict[str, Any]]:
    """`controlplane cassettes check`'s findings: one per flaw, with its fix."""
    command = record_command(cassette.path)
    return [
        {
            "file": str(cassette.path),
            "problem": "malformed answer",
            "detail": describe(cassette, number, flaw),
            "fix": fix(cassette, [number], command),
        }
        for number, flaw in flaws(cassette)
    ]
