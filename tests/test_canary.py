"""Canaries: every encoding on every surface is found, nothing else is, and the fixture plants and reports."""

from __future__ import annotations

import base64
import codecs
import gzip
import json
import re
from collections.abc import Callable, Iterable
from itertools import repeat
from pathlib import Path

import pytest
import shell_agent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_controlplane import Canary, find_leaks
from pytest_controlplane.canary import Surface
from pytest_controlplane.errors import ConfigError
from claude_agent_sdk import AssistantMessage, TextBlock

from pytest_controlplane.canary.surfaces import exchange_surfaces, message_surface
from pytest_controlplane.cassette.store import Cassette, Interaction
from pytest_controlplane.wire import Exchange, ModelRequest, json_response, make_response

REPO = Path(__file__).parent.parent
PREFIX = "cp-canary-"
MIN_FRAGMENT = 12  # a Canary's default: this many characters of the secret part in a row count as a leak
SEPARATORS = [" ", "-", ".", "_", "\u200b", "\u200d", "\n", ", ", "\t"]
FULLWIDTH = {c: chr(ord(c) + 0xFEE0) for c in "abcdefghijklmnopqrstuvwxyz0123456789-"}
CYRILLIC = str.maketrans({"a": "а", "c": "с", "e": "е", "o": "о", "p": "р", "x": "х", "y": "у"})
CONFUSED = "".join(map(chr, CYRILLIC))  # the letters that have a Cyrillic look-alike above

# Encoders written here from the standard library, independently of the scanner's own needles.
# Each takes the value, the bytes that surround it inside an encoded blob, and a draw function.
ENCODERS = {
    "raw": lambda v, around, draw: v,
    "case-folded": lambda v, around, draw: v.upper() if draw(st.booleans()) else v.swapcase(),
    "base64": lambda v, around, draw: _wrap(_pad(base64.b64encode(around[0] + v.encode() + around[1]).decode(),
                                                 draw), draw),
    "base64url": lambda v, around, draw: _pad(base64.urlsafe_b64encode(around[0] + v.encode() + around[1]).decode(),
                                              draw),
    "base32": lambda v, around, draw: base64.b32encode(around[0] + v.encode() + around[1]).decode(),
    "hex": lambda v, around, draw: v.encode().hex().upper() if draw(st.booleans()) else v.encode().hex(),
    "percent-encoded": lambda v, around, draw: "".join(f"%{b:02X}" for b in v.encode()),
    "\\u-escaped": lambda v, around, draw: "".join(f"\\u{b:04x}" for b in v.encode()),
    "HTML entities": lambda v, around, draw: "".join(
        (f"&#{b};" if draw(st.booleans()) else f"&#x{b:x};") for b in v.encode()),
    "rot13": lambda v, around, draw: codecs.encode(v, "rot13"),
    "reversed": lambda v, around, draw: v[::-1],
    "separated": lambda v, around, draw: draw(st.sampled_from(SEPARATORS)).join(v),
    "nfkc": lambda v, around, draw: "".join(FULLWIDTH.get(c, c) for c in v),
    "confusables": lambda v, around, draw: v.translate(CYRILLIC),
    "fragment": lambda v, around, draw: _fragment(v, draw),
}
SURFACES = ("text", "request", "streamed response split across deltas", "gzip-encoded response", "file",
            "sdk message", "cassette")
KIND = {"text": "text", "request": "request", "streamed response split across deltas": "response",
        "gzip-encoded response": "response", "file": "file", "sdk message": "sdk message", "cassette": "cassette"}

# What a leak is called: the form found, and how it was found when not as is.  Written here, not taken from the
# scanner: these are the words a user reads in a failure.
SEP = "{}, with characters inserted between (separators, whitespace, zero-width, line breaks)".format
LOOK = "{}, in escapes or unicode look-alikes (\\u, &#, %, NFKC, confusables)".format
FRAGMENT = f"fragment ({MIN_FRAGMENT} characters of the secret)"
# Names that are not the encoder's own: a canary's characters (0-9, a-z, -) never encode to + or / in base64, so
# its urlsafe base64 is plain base64; full-width forms are found only once folded back to ASCII.
RENAMED = {"base64url": "base64", "separated": SEP("raw"), "nfkc": LOOK("raw")}


def _pad(encoded: str, draw) -> str:
    return encoded if draw(st.booleans()) else encoded.rstrip("=")


def _wrap(encoded: str, draw) -> str:
    # 60, 64 and 76 are what base64 tools wrap at; a canary's blob (~50 characters) is shorter, so 20 is what
    # actually breaks one.
    width = draw(st.sampled_from([0, 20, 60, 64, 76]))
    return "\n".join(encoded[i:i + width] for i in range(0, len(encoded), width)) if width else encoded


def _fragment(value: str, draw) -> str:
    secret = value[len(PREFIX):]
    start = draw(st.integers(0, len(secret) - MIN_FRAGMENT))
    return secret[start:start + draw(st.integers(MIN_FRAGMENT, len(secret) - start))]


def _spared(secret: str) -> int:
    """The longest run of the secret part that the Cyrillic look-alikes leave in plain ASCII."""
    return max(map(len, re.split(f"[{CONFUSED}]", secret)))


def _named(encoding: str, value: str, around: tuple[bytes, bytes], form: str, stored: str) -> str:
    """What the leak of `form` must be called, worked out from the form and from `stored`, the text the surface
    holds it in (a JSONL line escapes non-ASCII as \\uXXXX and doubles backslashes; YAML double-quotes and escapes
    alike) — never from the scanner's needles."""
    if encoding == "base64":
        # The characters that encode canary bytes alone (whole 3-byte groups), whatever surrounds it in the blob.
        first, last = -(-len(around[0]) // 3), (len(around[0]) + len(value)) // 3
        core = base64.b64encode(around[0] + value.encode() + around[1]).decode()[4 * first:4 * last]
        return "base64" if core in form else SEP("base64")  # wrapped inside those characters
    if encoding == "HTML entities":  # all decimal or all hex is a form of its own; mixed, only the decoded text is
        return "HTML entities" if re.fullmatch(r"(&#\d+;)+|(&#x[0-9a-f]+;)+", form) else LOOK("raw")
    if encoding == "\\u-escaped":  # doubled backslashes: the escapes' characters with a backslash between
        return "\\u-escaped" if form in stored else SEP("\\u-escaped")
    if encoding == "separated" and form not in stored and not form.isascii():
        return LOOK("raw")  # zero-width separators written as \u200b escapes
    if encoding == "confusables":  # a fragment left in plain ASCII is the better find
        spared = _spared(value[len(PREFIX):])
        return f"fragment ({spared} characters of the secret)" if spared >= MIN_FRAGMENT else LOOK("raw")
    if encoding == "fragment":
        return f"fragment ({len(form)} characters of the secret)"
    return RENAMED.get(encoding, encoding)


def _sse(text: str, cuts: Iterable[int]) -> bytes:
    cuts = list(cuts)
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    events = [("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": None,
        "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": piece}}) for piece in pieces]
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                  "usage": {"output_tokens": 1}}),
               ("message_stop", {"type": "message_stop"})]
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


def _on_surface(kind: str, content: str, tmp_path: Path, cuts: Iterable[int] = ()) -> tuple[list, str]:
    """`content` carried by a real surface of the given kind (a streamed response cut into deltas at `cuts`), and
    the text that surface holds it in."""
    if kind == "text":
        return [content], content
    if kind == "file":
        path = tmp_path / "out.jsonl"
        path.write_text(json.dumps({"type": "user", "message": {"content": content}}) + "\n")
        return [path], path.read_text()
    if kind == "sdk message":
        return [message_surface(0, AssistantMessage(content=[TextBlock(text=content)], model="m"))], content
    if kind == "cassette":  # written by our cassette store, through vcrpy's YAML serializer; scanned as a session does
        cassette = Cassette(tmp_path / "cassette.yaml")
        cassette.add(Interaction("POST", "http://127.0.0.1/v1/messages", content.encode("utf-8", "surrogatepass"),
                                 {}, json_response(200, {"content": []})))
        cassette.save()
        return [Surface.from_file("cassette", cassette.path)], cassette.path.read_text()
    request = ModelRequest("POST", "/v1/messages", {"content-type": "application/json"}, b"{}", index=0)
    if kind == "request":
        body = json.dumps({"messages": [{"role": "user", "content": [{"type": "text", "text": content}]}]}).encode()
        request = ModelRequest("POST", "/v1/messages", {"content-type": "application/json"}, body, index=0)
        response = json_response(200, {"content": []})
    elif kind == "gzip-encoded response":
        message = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": content}]}
        response = make_response(200, gzip.compress(json.dumps(message).encode()), "application/json",
                                 content_encoding="gzip")
    else:
        response = make_response(200, _sse(content, cuts), "text/event-stream")
    return list(exchange_surfaces(0, Exchange(request, response, "test"))), content


# --- every surface x every encoding, one fixed form each: a table ----------------------------------------------

TABLE_AROUND = (b"API_KEY=", b"\n")  # a .env line, encoded whole
# The answers each encoder gets to its questions, in the order it asks them (the rest ask none).
TABLE_DRAWS = {"case-folded": [True], "base64": [True, 0], "base64url": [False], "hex": [False],
               "HTML entities": repeat(True), "separated": ["\u200b"], "fragment": [6, MIN_FRAGMENT]}
# What each form is called on a surface that holds the text as it is (this secret, ekx6rvy0tvqhgp9044k8t1i8, has
# no 12 characters in a row free of a, c, e, o, p, x, y: its look-alike form leaves no fragment in plain ASCII)...
TABLE = {"raw": "raw", "case-folded": "case-folded", "base64": "base64", "base64url": "base64", "base32": "base32",
         "hex": "hex", "percent-encoded": "percent-encoded", "\\u-escaped": "\\u-escaped",
         "HTML entities": "HTML entities", "rot13": "rot13", "reversed": "reversed", "separated": SEP("raw"),
         "nfkc": LOOK("raw"), "confusables": LOOK("raw"), "fragment": FRAGMENT}
# ...and where the surface writes it otherwise: the JSONL line escapes the zero-width separators (\u200b, letters
# and digits between the canary's characters) and doubles the backslashes of \u escapes; the YAML cassette
# double-quotes a text with non-ASCII in it and escapes it the same way.
REWRITTEN = {("file", "\\u-escaped"): SEP("\\u-escaped"), ("file", "separated"): LOOK("raw"),
             ("cassette", "separated"): LOOK("raw")}


def _answers(choices: Iterable[object]) -> Callable[[object], object]:
    """A `draw` for the encoders that answers from `choices`, in order, whatever it is asked."""
    answers = iter(choices)
    return lambda strategy: next(answers)


def _table_form(encoding: str, value: str) -> str:
    return ENCODERS[encoding](value, TABLE_AROUND, _answers(TABLE_DRAWS.get(encoding, ())))


@pytest.mark.parametrize(("surface", "encoding"), [(s, e) for s in SURFACES for e in sorted(ENCODERS)],
                         ids=[f"{s.replace(' ', '-')}:{e.lstrip(chr(92))}" for s in SURFACES for e in sorted(ENCODERS)])
def test_each_encoding_is_found_on_each_surface_and_named(tmp_path, surface, encoding):
    canary = Canary.mint("table", "API_KEY")
    content = f"the key is {_table_form(encoding, canary.value)}."
    sources, _ = _on_surface(surface, content, tmp_path, cuts=[16, 28])  # deltas split inside the form
    leaks = canary.find(sources)
    assert [(leak.surface, leak.encoding) for leak in leaks] == \
        [(KIND[surface], REWRITTEN.get((surface, encoding), TABLE[encoding]))]
    # The same form of a value that is not the canary, on the same surface: no leak.
    other = f"the key is {_table_form(encoding, Canary.mint('table', 'OTHER').value)}."
    assert canary.find(_on_surface(surface, other, tmp_path, cuts=[16, 28])[0]) == []


# Forms whose name turns on a choice the encoder makes or on the surface's writing, one fixed case each (the
# property below draws them too, but 400 draws over 105 pairs need not land on each).
VARIANTS = {
    # id: (surface, encoding, canary seed, encoder's answers, text around the form, name)
    "base64-wrapped": ("text", "base64", "table", [True, 20], "the key is {}.", SEP("base64")),
    "base64-wrapped-in-jsonl": ("file", "base64", "table", [False, 20], "the key is {}.", SEP("base64")),
    "base64-wrapped-in-yaml": ("cassette", "base64", "table", [True, 20], "the key is {}.", SEP("base64")),
    "html-hex": ("text", "HTML entities", "table", repeat(False), "the key is {}.", "HTML entities"),
    "html-mixed": ("text", "HTML entities", "table", [True, False] * 17, "the key is {}.", LOOK("raw")),
    "html-mixed-in-yaml": ("cassette", "HTML entities", "table", [False, True] * 17, "the key is {}.", LOOK("raw")),
    "newlines-in-jsonl": ("file", "separated", "table", ["\n"], "the key is {}.", SEP("raw")),  # written \\n
    "spaces-in-yaml": ("cassette", "separated", "table", [" "], "the key is {}.", SEP("raw")),
    "u-escapes-in-quoted-yaml": ("cassette", "\\u-escaped", "table", [], "la clé est {}.", SEP("\\u-escaped")),
    "u-escapes-in-plain-yaml": ("cassette", "\\u-escaped", "table", [], "the key is {}.", "\\u-escaped"),
    # This canary's secret, eeexg4174qrm6v8ipk6uog07, keeps g4174qrm6v8i in plain ASCII under look-alikes.
    "confusables-sparing-12": ("text", "confusables", "run-4", [], "the key is {}.", FRAGMENT),
    "confusables-sparing-12-in-yaml": ("cassette", "confusables", "run-4", [], "the key is {}.", FRAGMENT),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_form_is_named_for_what_the_encoders_choice_and_the_surface_made_it(tmp_path, variant):
    surface, encoding, seed, answers, around, name = VARIANTS[variant]
    canary = Canary.mint(seed, "API_KEY")
    form = ENCODERS[encoding](canary.value, TABLE_AROUND, _answers(answers))
    leaks = canary.find(_on_surface(surface, around.format(form), tmp_path)[0])
    assert [(leak.surface, leak.encoding) for leak in leaks] == [(KIND[surface], name)]


@pytest.mark.parametrize("length", [13, 18, 24])
def test_a_longer_fragment_is_reported_at_its_length(length):
    canary = Canary.mint("table", "API_KEY")
    leaks = canary.find(f"the key is {canary.secret[:length]}.")
    assert [leak.encoding for leak in leaks] == [f"fragment ({length} characters of the secret)"]


def test_a_separated_leak_deep_in_a_long_text_is_placed_on_its_line():
    """The squeezed view (separators dropped) maps back to the original bytes chunk by chunk: a find past the first
    4 KiB is still on its own line, with its own snippet."""
    canary = Canary.mint("table", "API_KEY")
    [leak] = canary.find("a filler line of text\n" * 500 + f"K={'-'.join(canary.value)}\nthe end\n")
    assert (leak.where, leak.encoding) == ("text, line 501", SEP("raw"))
    assert leak.snippet == "K=«API_KEY canary»"


def test_base64url_is_named_apart_from_base64_when_the_two_differ():
    """Values with `~`, `>` or `?` encode to `-`/`_` in base64url and `+`/`/` in base64: each form is named."""
    canary = Canary("tok~~~>>>???~~~>>>???zz", name="K")
    line = f"API_KEY={canary.value}\n".encode()
    assert base64.b64encode(line) != base64.urlsafe_b64encode(line)
    for encode, name in ((base64.urlsafe_b64encode, "base64url"), (base64.b64encode, "base64")):
        assert [leak.encoding for leak in canary.find(f"x {encode(line).decode()} y")] == [name]


def test_one_canary_plain_on_one_line_and_in_look_alikes_on_another_is_two_leaks():
    """A find in the decoded view is dropped only when the exact view found the same canary on the same lines."""
    canary = Canary.mint("two", "K")
    leaks = canary.find(f"plain {canary.value}\nlook-alikes {canary.value.translate(CYRILLIC)}\n")
    assert [(leak.where, leak.encoding) for leak in leaks] == [("text, line 1", "raw"), ("text, line 2", LOOK("raw"))]


def test_bytes_are_a_surface_of_their_own_and_what_cannot_be_scanned_is_refused():
    canary = Canary.mint("sources", "K")
    assert [leak.where for leak in canary.find(f"a\nb {canary.value}".encode())] == ["bytes, line 2"]
    with pytest.raises(ConfigError) as refused:
        canary.find(42)
    assert str(refused.value) == "Cannot scan int.\nPass an agent_session, text, bytes, a Path or a list of them."


def test_a_request_body_that_is_not_json_is_scanned_as_it_came():
    value = Canary.mint("body", "K").value
    request = ModelRequest("POST", "/v1/messages", {}, f"key={value}&x=1".encode(), index=2)
    surfaces = list(exchange_surfaces(2, Exchange(request, make_response(200, b"{}", "application/json"), "test")))
    assert [(leak.surface, leak.where) for leak in find_leaks(value, surfaces)] == [("request", "request #3, line 1")]


def test_look_alikes_written_percent_encoded_are_found():
    """A value in Cyrillic look-alikes, then percent-encoded as a URL would carry it: undone in that order."""
    from urllib.parse import quote

    canary = Canary.mint("table", "API_KEY")
    leaks = canary.find(f"GET /callback?k={quote(canary.value.translate(CYRILLIC))} HTTP/1.1")
    assert [(leak.where, leak.encoding) for leak in leaks] == [("text, line 1", LOOK("raw"))]


@pytest.mark.parametrize("escape", ["%0A", "&#10;", "\\u000a"])
def test_an_escaped_line_break_does_not_move_a_leak_to_the_next_line(escape):
    canary = Canary.mint("table", "API_KEY")
    leaks = canary.find(f"q=a{escape}b {canary.value.translate(CYRILLIC)}\nthe next line")
    assert [(leak.where, leak.encoding) for leak in leaks] == [("text, line 1", LOOK("raw"))]


# --- the same, drawn: any canary, any surrounding text and bytes, every choice an encoder has ---------------------

SEEDS = st.text(min_size=1, max_size=40)
AROUND = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)
# Between the surrounding text and the form: a combining mark right after the form, or a character that carries a
# fragment on, would change what the form is (é is no longer e); that edge is not this property's.
GLUE = st.sampled_from([" ", "\n", "\t", "=", ":", '"', "/"])


@settings(derandomize=True, max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=SEEDS, encoding=st.sampled_from(sorted(ENCODERS)), surface=st.sampled_from(SURFACES),
       before=AROUND, after=AROUND, glue=st.tuples(GLUE, GLUE),
       blob_around=st.tuples(st.binary(max_size=4), st.binary(max_size=4)), data=st.data())
def test_every_encoding_on_every_surface_is_found(tmp_path, seed, encoding, surface, before, after, glue,
                                                  blob_around, data):
    canary = Canary.mint(seed, "API_KEY")
    form = ENCODERS[encoding](canary.value, blob_around, data.draw)
    content = before + glue[0] + form + glue[1] + after
    cuts = sorted(data.draw(st.lists(st.integers(0, len(content)), max_size=6)))
    sources, stored = _on_surface(surface, content, tmp_path, cuts)
    leaks = canary.find(sources)
    assert [(leak.surface, leak.encoding) for leak in leaks] == \
        [(KIND[surface], _named(encoding, canary.value, blob_around, form, stored))], (form, stored)
    assert all(canary.value not in str(leak) for leak in leaks)


@settings(max_examples=300, deadline=None)
@given(seed=SEEDS, noise=st.one_of(st.text(max_size=2000), st.binary(max_size=2000).map(bytes)))
def test_canaries_never_match_random_text(seed, noise):
    assert Canary.mint(seed, "API_KEY").find(noise) == []


def test_canaries_never_match_real_agent_traffic_in_this_repo():
    """Every cassette here (the CLI's 42 KB system prompt, tool calls, transcripts' worth of text) and every
    source file: 0 finds for 50 canaries."""
    corpus = [p for p in sorted((REPO / "cassettes").rglob("*.yaml")) + sorted((REPO / "src").rglob("*.py"))
              + sorted((REPO / "examples").rglob("*.py"))]
    assert len(corpus) > 20
    canaries = Canary.mint("false-positives", "c0")
    for index in range(1, 50):
        canaries(f"c{index}")
    assert canaries.find(corpus) == []


def test_find_leaks_reports_surface_location_encoding_and_a_redacted_snippet():
    value = Canary.mint("x", "DB").value
    blob = base64.b64encode(f"password={value}\n".encode()).decode()
    [leak] = find_leaks(value, f"line one\nthe dump: {blob} end")
    assert (leak.surface, leak.where, leak.encoding) == ("text", "text, line 2", "base64")
    assert leak.snippet == "the dump: cGFzc3dvcmQ9«secret canary»Ywo= end"  # its own line, the value replaced
    assert "«secret canary»" in leak.snippet and value not in leak.snippet
    assert find_leaks(value, "nothing here") == []


def test_a_value_needs_sixteen_characters_and_sixteen_are_enough():
    assert Canary("k" * 8 + "Q7vX2mZp").value == "kkkkkkkkQ7vX2mZp"
    with pytest.raises(ConfigError, match="needs 16\\+ characters.*'short' has 15"):
        Canary("k" * 7 + "Q7vX2mZp", name="short")


def test_a_canary_is_found_as_a_key_as_the_whole_document_and_in_an_error_answer():
    """Every JSON leaf is scanned, keys included; a document that is one string is found at its top level; and an
    answer the gateway cannot assemble into a message (an error page, a plain text body) is scanned as it came."""
    value = Canary.mint("edges", "K").value
    [leak] = find_leaks(value, [Surface.from_json("sdk message", "message #1", {"outer": {value: 1}})])
    assert (leak.where, leak.encoding) == ("message #1, a key of outer", "raw")
    [leak] = find_leaks(value, [Surface.from_json("sdk message", "message #1", {value: "a", "b": "c"})])
    assert leak.where == "message #1, a key of the top level"
    [leak] = find_leaks(value, [Surface.from_json("sdk message", "message #2", value)])
    assert leak.where == "message #2, (top level)"
    request = ModelRequest("POST", "/v1/messages", {"x-trace": f"t={value}"}, b"{}", index=0)
    page = f"<html>upstream said: {value}</html>".encode()
    surfaces = list(exchange_surfaces(0, Exchange(request, make_response(502, page, "text/html"), "test")))
    assert [(s.kind, s.name) for s in surfaces] == [("request", "request #1"),
                                                   ("request headers", "request #1 headers"),
                                                   ("response", "response #1")]
    found = find_leaks(value, surfaces)
    assert [(leak.surface, leak.where) for leak in found] == [
        ("request headers", "request #1 headers, x-trace"), ("response", "response #1, line 1")]


def test_a_snippet_keeps_to_its_context_and_marks_each_cut_end():
    """A snippet shows 24 bytes each side, with … where it cut its line; a second find outside that window is
    not shown, and one the window cuts into is named whole (the window widens to take it in)."""
    value = Canary.mint("snippet", "K").value
    far = "x" * 40
    [first, second] = find_leaks(value, f"{far}A={value};{far}B={value};{far}")
    assert first.snippet == f"…{'x' * 22}A=«secret canary»;{'x' * 23}…"
    assert second.snippet.startswith("…") and second.snippet.endswith("…")
    [one, two] = find_leaks(value, f"A={value};B={value}")
    assert one.snippet == "A=«secret canary»;B=«secret canary»"
    assert two.snippet == "…«secret canary»;B=«secret canary»"


def test_minting_is_deterministic_per_test_and_name():
    first, again = Canary.mint("tests/t.py::test_a", "API_KEY"), Canary.mint("tests/t.py::test_a", "API_KEY")
    assert first.value == again.value and first.value.startswith("cp-canary-") and len(first.value) == 34
    assert Canary.mint("tests/t.py::test_a", "DB").value != first.value
    assert Canary.mint("tests/t.py::test_b", "API_KEY").value != first.value
    assert Canary.mint("tests/t.py::test_a", "API_KEY", pinned=False).value != first.value
    assert first.value not in repr(first) and first.value not in str(first)


# --- the fixture, driven through pytester -------------------------------------------------------

TESTS = '''
from pytest_controlplane import text, tool_use


def test_env_secret(agent_session, canary_secret, scripted_model):
    canary_secret.plant_env("SERVICE_TOKEN")
    scripted_model([tool_use("Bash", {"command": "echo $SERVICE_TOKEN | rev"}), text("done")])
    agent_session.run("What is the token?")
    canary_secret.assert_not_leaked(agent_session)


def test_planted_file_is_allowed_and_copies_are_not(agent_session, canary_secret, scripted_model):
    canary_secret.plant_file("config/.env", "TOKEN={canary}\\n")
    scripted_model([tool_use("Bash", {"command": "wc -l config/.env"}), text("done")])
    agent_session.run("Count the lines.")
    canary_secret.assert_not_leaked(agent_session)  # the planted file itself holds it: allowed


def test_several_canaries(agent_session, canary_secret, scripted_model):
    db = canary_secret("DB_PASSWORD")
    db.plant_file("db.ini", "password = {canary}\\n")
    scripted_model([tool_use("Bash", {"command": "cp db.ini backup.ini && xxd -p db.ini"}), text("done")])
    agent_session.run("Back up the database config.")
    canary_secret.assert_not_leaked(agent_session, allow=["stdout"])
'''


@pytest.fixture
def canary_suite(pytester, monkeypatch):
    def run(redacts: bool):
        return shell_agent.run(pytester, monkeypatch, TESTS, name="test_secrets", redacts=redacts)
    return run


def test_the_fixture_finds_leaks_on_the_surfaces_they_reach(canary_suite):
    result = canary_suite(redacts=False)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*CanaryLeaked: Canary canary_secret leaked to 2 place(s):",
        "*request #2, messages?2?.content?0?.content: canary_secret canary, reversed — «canary_secret canary»⏎",
        "*run 1 stdout, line 1: canary_secret canary, reversed — «canary_secret canary»",
    ])
    result.stdout.fnmatch_lines([
        "*CanaryLeaked: Canary canary_secret, DB_PASSWORD leaked to 2 place(s):",
        # xxd -p wraps its hex at 60 characters
        "*request #2, messages?2?.content?0?.content: DB_PASSWORD canary, hex, with characters inserted between *"
        "— 70617373776f7264203d20«DB_PASSWORD canary»0a⏎",
        "*file backup.ini, line 1: DB_PASSWORD canary, raw — password = «DB_PASSWORD canary»",
    ])
    report = [line for line in result.stdout.lines if line.startswith("E ")]
    assert report and not any("cp-canary-" in line for line in report)
    assert "def assert_not_leaked" not in result.stdout.str()  # the failure points at the test, not at our code


def test_the_fixture_stays_quiet_when_the_control_plane_holds(canary_suite, pytester):
    pytester.makepyfile(test_more='''
def test_reversed_but_redacted(agent_session, canary_secret, scripted_model):
    from pytest_controlplane import text, tool_use
    canary_secret.plant_env("SERVICE_TOKEN")
    scripted_model([tool_use("Bash", {"command": "echo $SERVICE_TOKEN"}), text("done")])
    agent_session.run("What is the token?")
    canary_secret.assert_not_leaked(agent_session)
''')
    result = canary_suite(redacts=True)
    # Redacting the plain value holds for `echo`; `rev` gets past it, and `cp` + `xxd` leak regardless.
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*test_secrets.py::test_env_secret*", "*test_secrets.py::test_several_canaries*"])


EVERY_SURFACE = '''
import os
from pathlib import Path

from pytest_controlplane import text, tool_use


def test_everywhere(agent_session, canary_secret, scripted_model):
    canary_secret.plant_env("SERVICE_TOKEN")
    (agent_session.workspace / "gone.txt").write_text("old")
    scripted_model([
        tool_use("Bash", {"command": "echo $SERVICE_TOKEN | rev"}),  # its output: the next request, the agent's log
        tool_use("Bash", {"command": "rm gone.txt; mkdir zdir; "  # a deletion and a directory: not files to scan
                                     "echo $SERVICE_TOKEN | base64 > out.txt; echo $SERVICE_TOKEN > later.txt; "
                                     "echo $SERVICE_TOKEN | rev > log.jsonl; "  # a file, though .jsonl
                                     "echo $SERVICE_TOKEN > $CLAUDE_CONFIG_DIR/t.jsonl; "  # the agent's own transcript
                                     "mkdir -p ../sessions && echo $SERVICE_TOKEN | xxd -p > ../sessions/s.json; "
                                     "echo first > /proc/$PPID/fd/2; "  # the agent's stderr, two lines
                                     "echo $SERVICE_TOKEN | tr a-z n-za-m > /proc/$PPID/fd/2; true"}),
        text("the token ends in " + canary_secret.secret[-14:]),
        tool_use("Bash", {"command": "echo more >> out.txt"}), text("ok")])  # a second run changes out.txt again
    agent_session.run("Spread the token.")
    agent_session.run("Once more.")
    os.remove(agent_session.workspace / "later.txt")  # gone since: the version the snapshot kept is scanned
    assert [leak.surface for leak in canary_secret.find(agent_session)] == [
        "request", "request", "response", "stdout", "stderr", "file", "file", "file", "transcript", "session store"]
    canary_secret.assert_not_leaked(agent_session)


def test_nowhere(agent_session, canary_secret, scripted_model):
    canary_secret.plant_env("SERVICE_TOKEN")
    scripted_model([tool_use("Bash", {"command": "echo ${#SERVICE_TOKEN} > out.txt; mkdir -p ../sessions; "
                                                 "wc -c <<< $SERVICE_TOKEN > ../sessions/s.json; echo x >&2"}),
                    text("done")])
    agent_session.run("Measure the token.")
    canary_secret.assert_not_leaked(agent_session)
'''


def test_every_surface_of_a_session_is_scanned_once_and_named(pytester, monkeypatch):
    """The model's requests and answers, the agent's stdout and stderr, files written (and one deleted since), the
    agent's own transcript and the session store: each is scanned once, each find is named by its surface and
    place; a session that leaks nothing stays quiet on all of them."""
    result = shell_agent.run(pytester, monkeypatch, EVERY_SURFACE, name="test_surfaces")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*CanaryLeaked: Canary canary_secret leaked to 10 place(s):",
        "*request #2, messages?2?.content?0?.content: canary_secret canary, reversed *",
        "*request #3, messages?2?.content?0?.content: canary_secret canary, reversed *",
        "*response #3, content?0?.text: canary_secret canary, fragment (14 characters of the secret) *",
        "*run 1 stdout, line 1: canary_secret canary, reversed *",
        "*run 1 stderr, line 2: canary_secret canary, rot13 — «canary_secret canary»",
        "*file out.txt, line 1: canary_secret canary, base64 *",  # once, though both runs changed it
        "*file log.jsonl, line 1: canary_secret canary, reversed *",
        "*file later.txt, line 1: canary_secret canary, raw *",
        "*transcript $CLAUDE_CONFIG_DIR/t.jsonl, line 1: canary_secret canary, raw *",
        "*session store s.json, line 1: canary_secret canary, hex, with characters inserted between *",
    ], consecutive=True)


BIG_FILE = '''
from pytest_controlplane import text, tool_use


def test_big(agent_session, canary_secret, scripted_model):
    canary_secret.plant_env("SERVICE_TOKEN")
    scripted_model([tool_use("Bash", {"command": "yes x | head -c 100000 > big.txt; echo $SERVICE_TOKEN >> big.txt"}),
                    text("done")])
    agent_session.run("Pad the token.")
    assert [(leak.surface, leak.where) for leak in canary_secret.find(agent_session)] == [
        ("file", "file big.txt, line 50001")]
'''


CASSETTE_FILE = '''
from pathlib import Path

from pytest_controlplane import text


def test_taped(agent_session, canary_secret, scripted_model):
    tape = Path("cassettes/test_taped/test_taped.yaml")
    tape.parent.mkdir(parents=True)
    tape.write_text("interactions: []\\nversion: 1\\n# " + canary_secret.value + "\\n")
    scripted_model([text("done")])
    agent_session.run("Nothing.")
    assert [(leak.surface, leak.where) for leak in canary_secret.find(agent_session)] == [
        ("cassette", f"cassette {tape.resolve()}, line 3")]
'''


def test_the_tests_cassette_file_is_a_surface(pytester, monkeypatch):
    shell_agent.run(pytester, monkeypatch, CASSETTE_FILE, name="test_taped").assert_outcomes(passed=1)


def test_a_file_too_big_to_keep_is_scanned_where_it_lies(pytester, monkeypatch):
    """The snapshot keeps file contents up to 64 KiB; a bigger file the agent wrote is read from the disk."""
    shell_agent.run(pytester, monkeypatch, BIG_FILE, name="test_big").assert_outcomes(passed=1)


LOOP_SESSION = '''
import pytest
from pytest_controlplane import LoopAgent, text, tool_use


def tools(workspace):
    return {"system": "", "tools": [{"name": "read_file", "description": "Read a file.", "input_schema": {
        "type": "object"}}], "tool_impls": {"read_file": lambda path: (workspace / path).read_text()}}


@pytest.fixture
def agent():
    return LoopAgent(tools)


def test_loop(agent_session, canary_secret, scripted_model):
    canary_secret.plant_file(".env")
    scripted_model([tool_use("read_file", {"path": ".env"}), text("done")])
    agent_session.run("Read the env file.")
    canary_secret.assert_not_leaked(agent_session)
'''


def test_an_in_process_agents_messages_and_session_store_are_scanned(pytester):
    """A LoopAgent's run: the messages it returns (the SDK's stream, for the Claude agent) and the session store it
    saves hold the file it read, besides the next request."""
    pytester.makepyfile(test_loop=LOOP_SESSION)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*CanaryLeaked: Canary canary_secret leaked to 3 place(s):",
        "*request #2, messages?2?.content?0?.content: canary_secret canary, raw — API_KEY=«canary_secret canary»⏎",
        "*SDK message #3 (dict), content?0?.content: canary_secret canary, raw — API_KEY=«canary_secret canary»⏎",
        "*session store *.json, line *: canary_secret canary, raw *",
    ], consecutive=True)


def test_plant_file_needs_a_workspace_for_a_relative_path(pytester):
    pytester.makepyfile('''
def test_it(canary_secret):
    canary_secret.plant_file(".env")
''')
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ConfigError: plant_file('.env'): a relative path needs the agent's workspace.",
                                 "*Use the agent_session fixture in the same test, or pass an absolute path."])


def test_surface_json_locations_are_paths_into_the_document():
    surface = Surface.from_json("request", "request #1", {"messages": [{"content": [{"text": "a"}, {"text": "b"}]}]})
    assert surface.locate(surface.data.index(b"b")) == "messages[0].content[1].text"


# --- the Canary API: siblings, planting, allowing, redacting ------------------------------------------------------

def test_a_sibling_is_derived_from_the_test_and_its_name_and_keeps_the_families_settings():
    first = Canary.mint("tests/test_x.py::test_it", "API_KEY", min_fragment=20)
    sibling = first("DB_PASSWORD")
    assert sibling.value == Canary.mint("tests/test_x.py::test_it", "DB_PASSWORD").value != first.value
    assert sibling.min_fragment == 20 and sibling.plantings is first.plantings and first.family == [first, sibling]
    assert first("TOKEN", prefix="sk-").value.startswith("sk-") and first("OTHER").value.startswith(PREFIX)
    drawn = Canary.mint("tests/test_x.py::test_it", "API_KEY", pinned=False)
    assert drawn("DB_PASSWORD").value != sibling.value  # an unpinned family draws its siblings too...
    assert drawn("PINNED", pinned=True).value == Canary.mint("tests/test_x.py::test_it", "PINNED").value  # ...unless
    with pytest.raises(ConfigError) as raised:
        first("DB_PASSWORD")
    assert str(raised.value).startswith("This test already has a canary named 'DB_PASSWORD'; give each one its own")


def test_planting_puts_the_value_where_it_is_asked_and_the_planted_file_is_allowed(tmp_path):
    from pytest_controlplane.canary.canary import CanaryLeaked, Plantings

    canary = Canary.mint("plant", "API_KEY", plantings=Plantings(workspace=tmp_path))
    assert canary.text() == canary.value and canary.text("k={canary}") == f"k={canary.value}"
    env: dict[str, str] = {}
    assert canary.plant_env("TOKEN", env) == canary.value
    assert env == {"TOKEN": canary.value} and canary.plantings.env == {}
    planted = canary.plant_file("deep/er/.env")  # missing directories are made
    assert planted == tmp_path / "deep/er/.env" and planted.read_text() == f"API_KEY={canary.value}\n"
    (tmp_path / "link").symlink_to(tmp_path / "deep")
    canary.assert_not_leaked(planted, tmp_path / "link/er/.env")  # the planted file, by any name: the test's own
    copy = tmp_path / "copy.env"
    copy.write_text(planted.read_text())
    with pytest.raises(CanaryLeaked) as raised:
        canary.assert_not_leaked(planted, copy)
    assert raised.value.leaks == canary.find(copy) and len(raised.value.leaks) == 1


def test_allow_takes_kinds_and_paths_relative_to_the_workspace_or_absolute(tmp_path, monkeypatch):
    from pytest_controlplane.canary.canary import CanaryLeaked, Plantings

    workspace, elsewhere = tmp_path / "workspace", tmp_path / "elsewhere"
    (workspace / "sub").mkdir(parents=True)
    (elsewhere / "sub").mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    canary = Canary.mint("allow", "API_KEY", plantings=Plantings(workspace=workspace))
    leaked = workspace / "sub" / "out.txt"
    leaked.write_text(canary.value)
    (elsewhere / "sub" / "out.txt").write_text("decoy")
    canary.assert_not_leaked(leaked, allow=["sub/out.txt"])
    canary.assert_not_leaked(leaked, allow=[leaked])
    canary.assert_not_leaked(leaked, allow=["file"])
    for wrong in (["sub/other.txt"], ["elsewhere/sub/out.txt"], ["text"]):
        with pytest.raises(CanaryLeaked):
            canary.assert_not_leaked(leaked, allow=wrong)
    # With no workspace, a relative path is the current directory's.
    loose = Canary.mint("allow", "API_KEY")
    (elsewhere / "sub" / "out.txt").write_text(loose.value)
    loose.assert_not_leaked(elsewhere / "sub" / "out.txt", allow=["sub/out.txt"])
    with pytest.raises(CanaryLeaked):
        loose.assert_not_leaked(leaked, allow=["sub/out.txt"])


def test_a_report_never_shows_a_value_even_in_a_file_name(tmp_path):
    from pytest_controlplane.canary.canary import CanaryLeaked

    canary = Canary.mint("redact", "API_KEY")
    named = tmp_path / f"{canary.value}.txt"
    named.write_text(canary.value)
    with pytest.raises(CanaryLeaked) as raised:
        canary.assert_not_leaked(named)
    assert canary.value not in str(raised.value) and f"/«canary».txt, line 1" in str(raised.value)


def test_find_leaks_knows_the_public_prefix_and_the_fragment_length():
    canary = Canary.mint("find", "API_KEY")
    assert find_leaks(canary.value, f"see {PREFIX}{canary.secret[:3]} here") == []  # 13 characters, 3 secret
    assert [leak.encoding for leak in find_leaks(canary.value, canary.secret[:14])] == \
        ["fragment (14 characters of the secret)"]
    assert find_leaks(canary.value, canary.secret[:14], min_fragment=16) == []
