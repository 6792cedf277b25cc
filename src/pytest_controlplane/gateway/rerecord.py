"""The command that records a test's cassette again, the way the cassette says it was made.

Every hint that sends the user to record says it: a missing, corrupt, missed, outdated or partly unplayed cassette.
A cassette recorded from the stand-in names its scripted model in its metadata (`script: FILE.py:NAME`), so its
command serves that again and needs no key; one recorded from the Anthropic API needs ANTHROPIC_API_KEY.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..cassette.store import METADATA_KEY, Cassette
from ..errors import CassetteCorrupt

# A function of a cassette's provenance (its metadata.controlplane; {} for none) that says how to record it again.
RecordCommand = Callable[[Mapping[str, Any]], str]


def pytest_command(nodeid: str, provenance: Mapping[str, Any]) -> str:
    """`pytest --agent-mode=record ...` for the test `nodeid`, run from the rootdir."""
    test = f"'{nodeid}'"
    source = str(provenance.get("source") or "")
    if provenance.get("script"):
        return f"pytest --agent-mode=record --agent-script {shlex.quote(str(provenance['script']))} {test}"
    if "scripted model" in source:
        return (
            f"pytest --agent-mode=record --agent-script FILE.py:NAME {test}, FILE.py:NAME naming the scripted model "
            "it was recorded from (its metadata does not say which)"
        )
    if "stand-in" in source:
        return f"pytest --agent-mode=record --agent-upstream URL {test}, URL serving again the {source}"
    return f"pytest --agent-mode=record {test} (with ANTHROPIC_API_KEY set)"


def library_command(provenance: Mapping[str, Any]) -> str:
    """What a ModelGateway used without pytest says."""
    return "run again with `--agent-mode=record` (pytest) or mode='record'"


def load(path: Path, record_command: RecordCommand) -> tuple[Cassette, str]:
    """The cassette at `path` and the command that records it again.  A corrupt one fails here, its hint naming
    that command as far as its metadata can still be read."""
    try:
        cassette = Cassette.load(path)
    except CassetteCorrupt as error:
        raise CassetteCorrupt(
            str(error).removesuffix(f"\n{error.hint}"),
            path=path,
            hint=f"Restore it (`git checkout -- {path}`), or record it again: {record_command(_readable(path))}",
        ) from error
    return cassette, record_command(cassette.provenance)


def _readable(path: Path) -> Mapping[str, Any]:
    """The provenance of a cassette that cannot be loaded, if its YAML still reads ({} if not)."""
    import yaml

    try:
        provenance = yaml.safe_load(path.read_text(encoding="utf-8"))["metadata"][METADATA_KEY]
    except Exception:  # what made the file unloadable may hide its metadata too
        return {}
    return provenance if isinstance(provenance, dict) else {}
