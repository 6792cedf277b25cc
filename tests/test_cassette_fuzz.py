"""Mutated real cassettes never make an internal error: loading one, checking its recorded answers, matching its
requests and reading its answers the way reports, budgets, oracles and canary scans do either works or fails with
CassetteCorrupt.  The cassettes are the repository's own (cassettes/, examples/) and the foreign ones of
tests/data/foreign (gzip, deflate and br streams as !!binary, vcrpy JSON, pydantic-ai, cassetter); the mutations are
the edits hands, crashes and bad merges make: a character or a brace dropped, a line or an event deleted, duplicated
or swapped, a body cut short, compressed bytes damaged, a Content-Type or Content-Encoding changed.

`bench/cassette_fuzz.py` runs the same mutations many more times."""

from __future__ import annotations

import copy
import functools
import gzip
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import brotli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_controlplane.canary.surfaces import exchange_surfaces
from pytest_controlplane.cassette import Cassette, malformed
from pytest_controlplane.codings import header
from pytest_controlplane.effects.attribution import tool_uses_by_request
from pytest_controlplane.errors import CassetteCorrupt
from pytest_controlplane.gateway.templating import Templater
from pytest_controlplane.report.data import summary
from pytest_controlplane.wire import Exchange, ModelRequest, token_counts

REPO = Path(__file__).resolve().parent.parent
Pick = Callable[[int], int]  # a number in range(n), drawn by Hypothesis or by a seeded random generator
ENCODE = {"gzip": gzip.compress, "deflate": zlib.compress, "br": brotli.compress}
CONTENT_TYPES = ("text/html; charset=utf-8", "application/json", "text/event-stream", "text/plain", "")


@functools.cache
def real_cassettes() -> tuple[Path, ...]:
    """Every cassette in the repository: ours and the foreign ones."""
    candidates = [*REPO.glob("cassettes/**/*.yaml"), *REPO.glob("examples/**/cassettes/**/*.yaml")]
    candidates += [*(REPO / "tests").rglob("*.yaml"), *(REPO / "tests").rglob("*.json")]
    return tuple(sorted(p for p in set(candidates) if "interactions" in p.read_text(errors="replace")))


def mutate_text(text: str, pick: Pick) -> str:
    """One edit: a character or a brace dropped, the text cut short, or a line or an event (the blank-line separated
    blocks of an event stream) deleted, duplicated or swapped with another."""
    how = pick(5)
    if how == 0 and text:
        at = pick(len(text))
        return text[:at] + text[at + 1 :]
    if how == 1:
        braces = [at for at, c in enumerate(text) if c in "{}[]"]
        if braces:
            at = braces[pick(len(braces))]
            return text[:at] + text[at + 1 :]
    if how == 2:
        return text[: pick(len(text) + 1)]
    separator = "\n" if how == 3 else "\n\n"
    units = text.split(separator)
    one, other = pick(len(units)), pick(len(units))
    edit = pick(3)
    if edit == 0:
        del units[one]
    elif edit == 1:
        units.insert(one, units[one])
    else:
        units[one], units[other] = units[other], units[one]
    return separator.join(units)


def mutate_response(response: dict[str, Any], pick: Pick) -> dict[str, Any]:
    """A copy of a response (vcrpy's shape) with its decoded body edited (and coded again), its stored bytes damaged,
    or its Content-Type or Content-Encoding changed."""
    response = copy.deepcopy(response)
    headers, body = response["headers"], response["body"]["string"] or b""
    coding = header(headers, "content-encoding").lower()
    how = pick(4)
    if how == 0:
        plain = _decoded(body, coding)
        edited = mutate_text(plain.decode("utf-8", "surrogateescape"), pick).encode("utf-8", "surrogateescape")
        response["body"]["string"] = ENCODE[coding](edited) if coding in ENCODE else edited
    elif how == 1 and body:
        at = pick(len(body))
        response["body"]["string"] = body[:at] + bytes([body[at] ^ 0xFF]) + body[at + 1 :] if pick(2) else body[:at]
    elif how == 2:
        _set(headers, "content-type", CONTENT_TYPES[pick(len(CONTENT_TYPES))])
    else:
        _set(headers, "content-encoding", ("", "gzip", "deflate", "br", "zstd")[pick(5)])
    return response


def _decoded(body: bytes, coding: str) -> bytes:
    try:
        return {"gzip": gzip.decompress, "deflate": zlib.decompress, "br": brotli.decompress}[coding](body)
    except (KeyError, OSError, EOFError, zlib.error, brotli.error):
        return body


def _set(headers: dict[str, list[str]], name: str, value: str) -> None:
    for key in [k for k in headers if k.lower() == name]:
        del headers[key]
    if value:
        headers[name] = [value]


def exercise(cassette: Cassette) -> None:
    """What replay and the readers of its answers do with a cassette: refuse it (CassetteCorrupt) or match every
    request and read every answer.  An answer the check accepts must read as a message."""
    malformed.refuse(cassette, "pytest --agent-mode=record 'test_x.py::test_y'")
    exchanges = []
    for number, interaction in enumerate(cassette.interactions):
        assert cassette.find(interaction.method, interaction.route, interaction.body) is not None
        request = ModelRequest(interaction.method, interaction.route, {}, interaction.body, index=number)
        response = Templater({"workspace": "/tmp/w"}).expand_response(interaction.response)
        exchanges.append(Exchange(request, response, "cassette", interaction=number))
        if interaction.route.endswith("/v1/messages") and exchanges[-1].status == 200:
            assert isinstance(exchanges[-1].answer, dict), f"interaction #{number} was accepted but reads as None"
        token_counts((exchanges[-1].answer or {}).get("usage") or {})
        list(exchange_surfaces(number, exchanges[-1]))
    cassette.closest("POST", "/v1/messages", cassette.interactions[0].body if cassette.interactions else b"{}")
    tool_uses_by_request(exchanges)
    gateway = SimpleNamespace(exchanges=exchanges, mode="replay", unplayed=lambda: 0)
    summary(SimpleNamespace(gateway=gateway), mode="replay")


def load_and_exercise(path: Path) -> str:
    """"accepted" or "refused" (CassetteCorrupt); anything else raised is an internal error."""
    try:
        exercise(Cassette.load(path))
    except CassetteCorrupt:
        return "refused"
    return "accepted"


def mutated_file(source: Path, pick: Pick, directory: Path) -> Path:
    """`source` with one text edit, written into `directory` under its own name."""
    target = directory / source.name
    target.write_text(mutate_text(source.read_text(encoding="utf-8"), pick), encoding="utf-8")
    return target


def mutated_cassette(source: Path, pick: Pick) -> Cassette:
    """`source` loaded, one of its interactions' response mutated."""
    cassette = Cassette.load(source)
    interaction = cassette.interactions[pick(len(cassette.interactions))]
    interaction.response = mutate_response(interaction.response, pick)
    return cassette


def _picker(data: st.DataObject) -> Pick:
    return lambda n: data.draw(st.integers(0, max(0, n - 1)))


FUZZ = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def test_the_real_cassettes_are_accepted_as_they_are():
    assert len(real_cassettes()) >= 20
    outcomes = {str(path.relative_to(REPO)): load_and_exercise(path) for path in real_cassettes()}
    assert outcomes == dict.fromkeys(outcomes, "accepted")


@FUZZ
@given(st.data())
def test_a_response_mutated_is_read_or_refused_never_an_internal_error(data):
    source = data.draw(st.sampled_from(real_cassettes()), label="cassette")
    cassette = mutated_cassette(source, _picker(data))
    try:
        exercise(cassette)
    except CassetteCorrupt:
        pass


@FUZZ
@given(st.data())
def test_a_cassette_file_mutated_is_loaded_or_refused_never_an_internal_error(data):
    source = data.draw(st.sampled_from(real_cassettes()), label="cassette")
    # a name of its own: another worker's test watches /tmp for what its agent leaves there (test_agent_failures.py)
    with tempfile.TemporaryDirectory(prefix="controlplane-fuzz-") as directory:
        load_and_exercise(mutated_file(source, _picker(data), Path(directory)))
