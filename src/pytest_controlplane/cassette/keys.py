"""The quick key a replayed request is found by: the sha256 of its raw body with what varies cut out.

What varies between two runs of the same agent — the date, the OS version and CLI build in the
system prompt, the session's metadata, where the cache marks sit — is found in one Aho-Corasick
pass over the raw bytes and cut around while hashing: no JSON parsing, no copy.  `cut` gives the
same bytes whether a JSON value is cut whole or member by member, so a stored body is keyed from
its parts (cassette.body) and gets the key of the request it was recorded from.

`ConversationKeys` keys a stream of requests that each repeat the one before (an agent resends its
whole history): the hash state is saved at checkpoints, and a request resumes from the last
checkpoint it shares with an earlier request, cutting and hashing only what follows.  Every cut
pattern matches at most a few hundred bytes and no marker lies within `MARGIN` of a checkpoint, so
a cut decision before a checkpoint can never depend on bytes after it.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import re
from collections.abc import Iterator
from typing import Any

from .matching import VARYING_SOURCES

Key = tuple[str, str, bytes]

_MARKS = (
    (b'"cache_control":', re.compile(rb'"cache_control":\{[^{}]{0,400}\}'), b""),
    (b'"metadata":', re.compile(rb'"metadata":\{[^{}]{0,400}\}'), b""),
)
_CUTS = (
    tuple(
        (
            marker.encode(),
            re.compile(pattern.encode()),
            replacement.encode() if isinstance(replacement, str) else replacement,
        )
        for marker, pattern, replacement in VARYING_SOURCES
    )
    + _MARKS
)
LONGEST_CUT = 450  # no pattern above matches more bytes than this


@functools.cache
def _markers() -> Any:
    from ahocorasick_rs import MATCHKIND_LEFTMOST_FIRST, BytesAhoCorasick, Implementation

    # One pass for all markers (a DFA with a SIMD prefilter: ~15 GB/s, where five bytes.find take ~0.9 ms per MB).
    return BytesAhoCorasick(
        [marker for marker, _, _ in _CUTS], matchkind=MATCHKIND_LEFTMOST_FIRST, implementation=Implementation.DFA
    )


def _found(data: bytes, start: int = 0) -> list[tuple[int, int]]:
    """(pattern number, offset) of every marker in data[start:]."""
    found = _markers().find_matches_as_indexes(data[start:] if start else data)
    return [(number, offset + start) for number, offset, _ in found]


def _cuts(data: bytes, found: list[tuple[int, int]], start: int = 0) -> Iterator[tuple[int, int, bytes]]:
    """Where `data` has what varies between identical runs: (start, end, what stands there instead)."""
    position = start
    for number, offset in found:
        if offset < position:
            continue
        _, pattern, replacement = _CUTS[number]
        match = pattern.match(data, offset)
        if match is None:
            continue
        begin, end = match.span()
        if replacement == b"":  # a key and its value go with one comma, as if the key had never been there
            if begin > position and data[begin - 1 : begin] == b",":
                begin -= 1
            elif data[end : end + 1] == b",":
                end += 1
        yield begin, end, match.group(replacement) if isinstance(replacement, int) else replacement
        position = end


def cut(data: bytes) -> bytes:
    """A raw JSON body (or one value of it) without what varies between identical runs: the varying text
    replaced, cache marks and metadata objects cut out with their comma."""
    pieces: list[bytes | memoryview] = []
    view, position = memoryview(data), 0
    for begin, end, replacement in _cuts(data, _found(data)):
        pieces += (view[position:begin], replacement)
        position = end
    if not pieces:
        return data
    pieces.append(view[position:])
    return b"".join(pieces)


def quick_key(method: str, route: str, body: bytes) -> Key:
    """Method, path and the sha256 of `cut(body)`, hashed around the cuts.  A request it misses (another
    client's JSON spacing, say) is still matched through the normalised body (`matching.match_key`)."""
    return ConversationKeys().key(method, route, body)  # a conversation of one request


class ConversationKeys:
    """`quick_key` for the requests of one replay, each costing what it adds to an earlier one."""

    SPACING = 16 * 1024  # bytes between checkpoints
    MARGIN = 2 * LONGEST_CUT  # no marker this close to a checkpoint
    KEPT = 4  # earlier requests to resume from (the CLI interleaves side requests with another prompt)

    def __init__(self) -> None:
        self._earlier: dict[tuple[str, str], list[tuple[bytes, list[int], list[Any]]]] = {}

    def key(self, method: str, route: str, body: bytes) -> Key:
        method = method.upper()
        earlier = self._earlier.setdefault((method, route), [])
        offsets, states = [0], [hashlib.sha256()]
        for old, old_offsets, old_states in reversed(earlier):
            index = self._shared(body, old, old_offsets)
            if old_offsets[index] > offsets[-1]:
                offsets, states = old_offsets[: index + 1], old_states[: index + 1]
                if 2 * offsets[-1] >= len(body):
                    break
        start, state = offsets[-1], states[-1].copy()
        found = _found(body, start)
        starts = [offset for _, offset in found]
        wanted = [
            o for o in range(start + self.SPACING, len(body) - self.MARGIN, self.SPACING) if self._clear(starts, o)
        ]
        view, position = memoryview(body), start
        for begin, end, replacement in [*_cuts(body, found, start), (len(body), len(body), b"")]:
            while wanted and wanted[0] <= begin:
                checkpoint = wanted.pop(0)
                state.update(view[position:checkpoint])
                position = checkpoint
                offsets.append(checkpoint)
                states.append(state.copy())
            state.update(view[position:begin])
            state.update(replacement)
            position = end
        earlier.append((body, offsets, states))
        del earlier[: -self.KEPT]
        return method, route, state.digest()

    def _clear(self, starts: list[int], offset: int) -> bool:
        """No marker within MARGIN of `offset` (so no cut reaches across it, or is decided by bytes past it)."""
        index = bisect.bisect_left(starts, offset - self.MARGIN)
        return index == len(starts) or starts[index] > offset + self.MARGIN

    def _shared(self, body: bytes, old: bytes, offsets: list[int]) -> int:
        """The index of the last checkpoint of `old` whose bytes, and MARGIN more, `body` starts with."""
        low, high = 0, len(offsets) - 1  # offsets[0] == 0: nothing shared
        view = memoryview(old)
        while low < high:
            middle = (low + high + 1) // 2
            end = offsets[middle] + self.MARGIN
            if end <= len(body) and body.startswith(view[:end]):
                low = middle
            else:
                high = middle - 1
        return low
