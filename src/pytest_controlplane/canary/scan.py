"""One pass per view over a surface's bytes finds every encoded form of every canary (Aho-Corasick).

Offsets found in the squeezed view are mapped back to the original bytes; the unicode view
(escapes decoded, NFKC, confusables folded) is built only for lines that are not plain ASCII and
reports whole lines.  Byte dumps (`xxd`, `hexdump -C`, `od -c`) cut a value across their lines, between offsets
and columns: a run of dump lines is read back into the bytes it shows and scanned as such, a find spanning the run.
"""

from __future__ import annotations

import bisect
import codecs
import functools
import html
import itertools
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

from .needles import ALNUM, DEFAULT_MIN_FRAGMENT, NOT_ALNUM, Needle, needles_for, squeeze

# Latin look-alikes from other scripts that NFKC leaves alone (the common ones of Unicode's confusables list).
_LOOK_ALIKES = {
    "а": "a",
    "в": "b",
    "е": "e",
    "к": "k",
    "м": "m",
    "н": "h",
    "о": "o",
    "р": "p",
    "с": "c",
    "т": "t",
    "у": "y",
    "х": "x",
    "ѕ": "s",
    "і": "i",
    "ј": "j",
    "ԁ": "d",
    "ɡ": "g",
    "ԛ": "q",
    "ԝ": "w",
    "ı": "i",
    "α": "a",
    "β": "b",
    "ε": "e",
    "ι": "i",
    "κ": "k",
    "ν": "v",
    "ο": "o",
    "ρ": "p",
    "τ": "t",
    "υ": "u",
    "χ": "x",
    "ℓ": "l",
    "ⅰ": "i",
}
_LOOK_ALIKES.update({k.upper(): v for k, v in _LOOK_ALIKES.items() if k.upper() != k})
_FOLD = "pytest-controlplane-fold"


@functools.lru_cache(maxsize=8192)
def _folded(run: str) -> str:
    return "".join(_LOOK_ALIKES.get(c, c if c.isascii() else "") for c in unicodedata.normalize("NFKC", run))


@functools.lru_cache(maxsize=8192)
def _unescaped(code: bytes) -> bytes:
    return chr(int(code, 16)).encode("utf-8", "replace")


def _fold(error: UnicodeError) -> tuple[str, int]:
    return _folded(error.object[error.start : error.end]), error.end  # type: ignore[attr-defined]


codecs.register_error(_FOLD, _fold)
_ESCAPE = re.compile(rb"\\(?:u([0-9a-f]{4})|x([0-9a-f]{2}))")  # JSON, JavaScript, YAML (\xNN) escapes
_PERCENT = re.compile(rb"%[0-9a-f]{2}")
_PRIORITY = {"lower": 0, "squeezed": 1, "unicode": 2}
_CHUNK = 4096


@dataclass
class Hit:
    """A canary found in some bytes: which one, in what form, where (offsets in those bytes)."""

    canary: int
    encoding: str
    start: int
    end: int


class Scanner:
    """Searches bytes for several canaries at once, in every encoding `needles` knows."""

    def __init__(self, values: list[tuple[str, str]], *, min_fragment: int = DEFAULT_MIN_FRAGMENT) -> None:
        """`values`: (canary value, its secret part) pairs; fragments of `min_fragment`+ characters of a
        secret part count as leaks."""
        from ahocorasick_rs import MATCHKIND_LEFTMOST_LONGEST, BytesAhoCorasick, Implementation

        self.values = values
        # A fragment is found as windows of `min_fragment` characters; a find is extended as far as the secret goes.
        self._secrets = {
            "lower": [secret.encode().lower() for _, secret in values],
            "squeezed": [squeeze(secret.encode()) for _, secret in values],
        }
        needles = needles_for(values, min_fragment)
        self._lower = [n for n in needles if n.view == "lower"]
        self._squeezed = [n for n in needles if n.view == "squeezed"]
        # Leftmost-longest: of the overlapping needles of one find (the value, its fragments) the longest wins.
        kind, dfa = MATCHKIND_LEFTMOST_LONGEST, Implementation.DFA  # a DFA scans ~2.5x faster than the NFA
        self._lower_search = BytesAhoCorasick([n.pattern for n in self._lower], matchkind=kind, implementation=dfa)
        self._squeezed_search = BytesAhoCorasick(
            [n.pattern for n in self._squeezed], matchkind=kind, implementation=dfa
        )

    def scan(self, data: bytes) -> list[Hit]:
        """Every canary in `data`, overlapping finds of one canary merged into the most telling one."""
        hits = self._finds(data)
        for shown, begin, stop in _dumps(data):
            hits += [(0, Hit(h.canary, f"{h.encoding}, in a byte dump", begin, stop)) for _, h in self._finds(shown)]
        return _merge(hits)

    def _finds(self, data: bytes) -> list[tuple[int, Hit]]:
        """The ranked finds of every view of `data`, before they are merged."""
        lower = data.lower()
        hits: list[tuple[int, Hit]] = []
        for index, start, end in self._lower_search.find_matches_as_indexes(lower):
            needle = self._lower[index]
            end = self._extended(needle, "lower", lower, start, end)
            hits.append((_rank(needle, "lower"), Hit(needle.canary, self._exact(needle, data[start:end]), start, end)))
        decoding = (
            not data.isascii()
            or b"\\u" in lower
            or b"\\x" in lower
            or b"&#" in lower
            or (b"%" in lower and _PERCENT.search(lower))
        )
        view = _decoded(lower) if decoding else _spaced(lower)
        squeezed = view.translate(None, NOT_ALNUM)
        found = self._squeezed_search.find_matches_as_indexes(squeezed)
        if found:
            positions = _SqueezeMap(view)
            lines = _Lines(data, view) if decoding else None
            for index, start, end in found:
                needle = self._squeezed[index]
                end = self._extended(needle, "squeezed", squeezed, start, end)
                first, last = positions.original(start), positions.original(end - 1) + 1
                if lines is None:
                    hits.append(
                        (_rank(needle, "squeezed"), Hit(needle.canary, _separated(needle.encoding), first, last))
                    )
                else:
                    hits.extend(self._decoded_hit(needle, lower, hits, *lines.span(first, last)))
        return hits

    def _decoded_hit(
        self, needle: Needle, lower: bytes, hits: list[tuple[int, Hit]], begin: int, stop: int
    ) -> list[tuple[int, Hit]]:
        """A find in the decoded view, on lines begin:stop of the original: none if the exact view already found it
        there (with its place), else the form it has there — separated plain text, or escapes and look-alikes."""
        if any(h.canary == needle.canary and begin <= h.start < stop for r, h in hits if r < _rank(needle, "squeezed")):
            return []
        plain = [
            self._squeezed[i]
            for i, _, _ in self._squeezed_search.find_matches_as_indexes(
                _spaced(lower[begin:stop]).translate(None, NOT_ALNUM)
            )
            if self._squeezed[i].canary == needle.canary
        ]
        if plain:
            return [(_rank(plain[0], "squeezed"), Hit(needle.canary, _separated(plain[0].encoding), begin, stop))]
        return [(_rank(needle, "unicode"), Hit(needle.canary, _unicode(needle.encoding), begin, stop))]

    def _extended(self, needle: Needle, view: str, text: bytes, start: int, end: int) -> int:
        """The end of a fragment found at text[start:end], continued as far as the text goes on with the secret
        (the search reports windows that never overlap: a 24-character fragment would be two 12-character ones)."""
        if needle.encoding != "fragment":
            return end
        secret, window, longest = self._secrets[view][needle.canary], text[start:end], end
        at = secret.find(window)
        while at != -1:
            stop = end
            while stop < len(text) and at + stop - start < len(secret) and text[stop] == secret[at + stop - start]:
                stop += 1
            longest = max(longest, stop)
            at = secret.find(window, at + 1)
        return longest

    def _exact(self, needle: Needle, found: bytes) -> str:
        if needle.encoding == "raw" and found != self.values[needle.canary][0].encode():
            return "case-folded"
        if needle.encoding == "fragment":
            return f"fragment ({len(found)} characters of the secret)"
        return needle.encoding


# Lines of a byte dump: xxd (`00000010: 4162 4364  AbCd`), hexdump -C (`00000010  41 62 43 64  |AbCd|`), od -c
# (`0000020   A   b   C   d`: one character per 4 columns).
_XXD = re.compile(rb"^[0-9a-f]{7,8}: ((?:[0-9a-f]{2,4} )+) .*$", re.I)
_HEXDUMP = re.compile(rb"^[0-9a-f]{8}  ((?:[0-9a-f]{2}  ?)+) *\|.*\|$", re.I)
_OD = re.compile(rb"^(?:[0-7]{7}((?:   .|  \\[a-z0-9]| [0-7]{3})+)|((?:   .|  \\[a-z0-9]| [0-7]{3}){4,}))$")
_OD_ESCAPES = {b"\\n": b"\n", b"\\t": b"\t", b"\\r": b"\r", b"\\0": b"\0"}


def _dumps(data: bytes) -> list[tuple[bytes, int, int]]:
    """Each run of byte-dump lines in `data` (its lines broken by newlines, or by JSON's escaped ones, as a tool's
    output is in a request or a report's JSON): the bytes it shows, and where the run starts and ends."""
    # Every dump starts at offset 0 (`od -An` has no offsets: its lines are searched as they are).
    if b"\n0000" in data or data.startswith(b"0000"):
        view = data
    elif b"\\n0000" in data:  # escaped: a line break where JSON has `\n` (od's own `\n` cell is `\\n` there)
        view = re.sub(rb"(?<!\\)\\n", b"\n\0", data).replace(b'"0000', b"\n0000")  # the same offsets
    else:
        return []
    runs: list[tuple[bytes, int, int]] = []
    shown, begin, offset = b"", -1, 0
    for line in view.split(b"\n"):
        decoded = _dump_line(line.lstrip(b"\0").rstrip(b"\r"))
        if decoded is not None:
            shown, begin = shown + decoded, offset if begin < 0 else begin
        elif begin >= 0:
            runs.append((shown, begin, offset - 1))
            shown, begin = b"", -1
        offset += len(line) + 1
    if begin >= 0:
        runs.append((shown, begin, len(data)))
    return runs


def _dump_line(line: bytes) -> bytes | None:
    """The bytes one dump line shows, or None if it is no dump line."""
    for pattern in (_XXD, _HEXDUMP):
        found = pattern.match(line)
        if found:
            try:
                return bytes.fromhex(found.group(1).decode())
            except ValueError:
                return None
    found = _OD.match(line)
    if not found:
        return None
    cells = found.group(1) or found.group(2)  # with its offset column, or without (od -An)
    shown = b""
    for i in range(0, len(cells), 4):
        cell = cells[i : i + 4].strip() or b" "
        shown += _OD_ESCAPES.get(cell, bytes([int(cell, 8)]) if cell.isdigit() and len(cell) == 3 else cell[-1:])
    return shown


def _rank(needle: Needle, view: str) -> int:
    return _PRIORITY[view] * 2 + (needle.encoding == "fragment")


def _separated(encoding: str) -> str:
    return f"{encoding}, with characters inserted between (separators, whitespace, zero-width, line breaks)"


def _unicode(encoding: str) -> str:
    return f"{encoding}, in escapes or unicode look-alikes (\\u, &#, %, NFKC, confusables)"


def _merge(hits: list[tuple[int, Hit]]) -> list[Hit]:
    """Overlapping finds of one canary are one leak: keep the best-ranked form, spanning them all."""
    merged: list[Hit] = []
    by_canary = sorted(hits, key=lambda item: (item[1].canary, item[1].start))
    for _, group in itertools.groupby(by_canary, key=lambda item: item[1].canary):
        cluster: list[tuple[int, Hit]] = []
        end = -1
        for rank, hit in group:
            if cluster and hit.start >= end:
                merged.append(_best(cluster))
                cluster = []
            cluster.append((rank, hit))
            end = max(end, hit.end) if len(cluster) > 1 else hit.end
        if cluster:
            merged.append(_best(cluster))
    return sorted(merged, key=lambda hit: (hit.start, hit.canary))


def _best(cluster: list[tuple[int, Hit]]) -> Hit:
    """The best-ranked find of a cluster, spanning the finds of its own rank (fragment windows join up)."""
    rank, best = min(cluster, key=lambda item: (item[0], -(item[1].end - item[1].start)))
    peers = [h for r, h in cluster if r == rank]
    start, end = min(h.start for h in peers), max(h.end for h in peers)
    encoding = best.encoding
    if encoding.startswith("fragment ("):
        encoding = f"fragment ({end - start} characters of the secret)"
    return Hit(best.canary, encoding, start, end)


def _spaced(lower: bytes) -> bytes:
    """JSON-escaped whitespace (a separator written to JSONL as \\n) as spaces, keeping every offset."""
    for escape in (b"\\n", b"\\t", b"\\r"):
        if escape in lower:
            lower = lower.replace(escape, b"  ")
    return lower


def _decoded(lower: bytes) -> bytes:
    """`\\uXXXX`, `&#...;` and `%XX` decoded, non-ASCII through NFKC and the look-alike table, lowercased; line by
    line, so that the view has the lines of the text (an escaped line break, `%0A`, is not a line of its own)."""
    return b"\n".join(_decoded_line(line) for line in _spaced(lower).split(b"\n"))


def _decoded_line(decoded: bytes) -> bytes:
    if decoded.isascii() and not any(mark in decoded for mark in (b"\\u", b"\\x", b"&#", b"%")):
        return decoded
    if b"\\u" in decoded or b"\\x" in decoded:
        decoded = _ESCAPE.sub(lambda m: _unescaped(m.group(1) or m.group(2)), decoded)
    if b"&#" in decoded:
        decoded = html.unescape(decoded.decode("utf-8", "replace")).encode("utf-8", "replace")
    if b"%" in decoded:
        decoded = unquote_to_bytes(decoded)
    # Runs of non-ASCII characters go through the codec's error handler (_fold); ASCII is copied as is.
    return decoded.decode("utf-8", "replace").encode("ascii", _FOLD).lower().replace(b"\n", b" ")


class _Lines:
    """Line numbers survive decoding: map a span of the decoded view to the same lines of the original."""

    def __init__(self, data: bytes, view: bytes) -> None:
        self.data, self.view = data, view
        self.starts = [0] + [m.end() for m in re.finditer(b"\n", data)]

    def span(self, first: int, last: int) -> tuple[int, int]:
        line_first = self.view.count(b"\n", 0, first)
        line_last = line_first + self.view.count(b"\n", first, last)
        begin = self.starts[min(line_first, len(self.starts) - 1)]
        end = self.data.find(b"\n", self.starts[min(line_last, len(self.starts) - 1)])
        return begin, end if end != -1 else len(self.data)


class _SqueezeMap:
    """Maps an offset in the squeezed view back to the original bytes (built only when something was found)."""

    def __init__(self, lower: bytes) -> None:
        self.lower = lower
        counts = (len(lower[i : i + _CHUNK].translate(None, NOT_ALNUM)) for i in range(0, len(lower), _CHUNK))
        self.before = list(itertools.accumulate(counts, initial=0))

    def original(self, kept: int) -> int:
        chunk = bisect.bisect_right(self.before, kept) - 1
        remaining = kept - self.before[chunk]
        base = chunk * _CHUNK
        for position, byte in enumerate(self.lower[base : base + _CHUNK]):
            if byte in ALNUM:
                if remaining == 0:
                    return base + position
                remaining -= 1
        return min(base + _CHUNK, len(self.lower)) - 1
