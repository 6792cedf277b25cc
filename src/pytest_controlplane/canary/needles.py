"""Every form a canary can take once an agent (or an attacker steering it) has transformed it.

Each form becomes a needle: a byte string searched for in one *view* of a surface.

- view "lower": the surface's bytes, ASCII-lowercased.  Exact forms: raw (case-folded too),
  reversed, rot13, hex, percent-encoding, `\\uXXXX` escapes, HTML entities, and the part of a
  base64 / base32 encoding that does not depend on the bytes around the canary (one needle per
  byte alignment: 3 for base64, 5 for base32), and fragments of the secret part.
- view "squeezed": the same with every byte but `[a-z0-9]` removed.  The squeezed needles catch
  the same forms with separators, whitespace, zero-width characters or line breaks inserted
  (a line-wrapped base64 blob, `c-p-c-a-n-a-r-y`, a hex dump with spaces, a padding change).

Everything is matched case-insensitively: the needles are long enough (12+ characters of a
high-entropy value) that this costs no false positives.
"""

from __future__ import annotations

import base64
import codecs
from dataclasses import dataclass

ALNUM = b"abcdefghijklmnopqrstuvwxyz0123456789"
NOT_ALNUM = bytes(b for b in range(256) if b not in ALNUM)
DEFAULT_MIN_FRAGMENT = 12


@dataclass(frozen=True)
class Needle:
    pattern: bytes
    view: str  # "lower" or "squeezed"
    encoding: str  # the family: "raw", "base64", "hex", ...
    canary: int  # index of the canary it belongs to


def squeeze(data: bytes) -> bytes:
    return data.lower().translate(None, NOT_ALNUM)


def exact_forms(value: str) -> list[tuple[str, bytes]]:
    """(encoding, needle) of the forms searched for in the lowercased view."""
    raw = value.encode()
    forms = [
        ("raw", raw),
        ("reversed", raw[::-1]),
        ("rot13", codecs.encode(value, "rot13").encode()),
        ("hex", raw.hex().encode()),
        ("percent-encoded", "".join(f"%{b:02x}" for b in raw).encode()),
        ("\\u-escaped", "".join(f"\\u{b:04x}" for b in raw).encode()),
        ("HTML entities", "".join(f"&#{b};" for b in raw).encode()),
        ("HTML entities", "".join(f"&#x{b:x};" for b in raw).encode()),
    ]
    for core in _stable_cores(raw, 3, base64.b64encode):
        forms.append(("base64", core))
        urlsafe = core.translate(bytes.maketrans(b"+/", b"-_"))
        if urlsafe != core:
            forms.append(("base64url", urlsafe))
    forms.extend(("base32", core) for core in _stable_cores(raw, 5, base64.b32encode))
    return [(encoding, needle.lower()) for encoding, needle in forms]


def fragments(secret: str, min_length: int) -> list[bytes]:
    """Every window of `min_length` characters of the secret part (a longer fragment contains one)."""
    data = secret.encode().lower()
    if len(data) <= min_length:
        return []
    return [data[i : i + min_length] for i in range(len(data) - min_length + 1)]


def needles_for(values: list[tuple[str, str]], min_fragment: int = DEFAULT_MIN_FRAGMENT) -> list[Needle]:
    """Needles for several canaries, each given as (value, its secret part: the value minus a public prefix)."""
    found: dict[tuple[bytes, str], Needle] = {}
    for index, (value, secret) in enumerate(values):
        forms = exact_forms(value)
        for encoding, pattern in forms:
            found.setdefault((pattern, "lower"), Needle(pattern, "lower", encoding, index))
        for pattern in fragments(secret, min_fragment):
            found.setdefault((pattern, "lower"), Needle(pattern, "lower", "fragment", index))
        for encoding, pattern in forms + [("fragment", p) for p in fragments(secret, min_fragment)]:
            squeezed = squeeze(pattern)
            if len(squeezed) >= min(min_fragment, len(squeeze(value.encode()))):
                found.setdefault((squeezed, "squeezed"), Needle(squeezed, "squeezed", encoding, index))
    return list(found.values())


def _stable_cores(raw: bytes, group: int, encode: object) -> list[bytes]:
    """The encoded characters that are the same whatever precedes or follows `raw`, for each byte alignment.

    Base64 turns 3 bytes into 4 characters (base32: 5 into 8); with `a` bytes before the canary,
    the groups made only of canary bytes start at canary offset (group - a) % group.
    """
    cores = []
    for before in range(group):
        start = (group - before) % group
        whole = (len(raw) - start) // group * group
        if whole >= group * 2:
            cores.append(encode(raw[start : start + whole]))  # type: ignore[operator]
    return cores
