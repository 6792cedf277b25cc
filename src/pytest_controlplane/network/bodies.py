"""The views of a body a scan reads: as sent, inflated, each multipart part — and each of those read again, so the
secret in a gzip file sent as a form part (`curl -F f=@x.gz`) is found as well as in a gzip body (`gzip -c .env |
curl --data-binary @-`, with or without a Content-Encoding header).

    for view in views(body, headers):
        view.encoding   # "" (the body as sent), "gzip", "multipart part \"f\" (.env), then gzip", ...
        view.data       # its bytes; view.note says why a declared encoding was not decoded

Compressions are told by the Content-Encoding header (gzip, deflate as zlib or raw, br) and by their magic bytes
(gzip, zlib); a body that is not UTF-8 and has no magic is tried as raw deflate and as br too.  The sink records a
body as sent (http_request.py): decoding is done here alone.  Bounded everywhere: a view holds at most `LIMIT`
bytes, a body yields at most `MOST` views, `DEPTH` decodings deep.
"""

from __future__ import annotations

import binascii
import quopri
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

LIMIT = 1024 * 1024  # bytes of one inflated view: a compression bomb stops here
MOST = 32
DEPTH = 4
_BOUNDARY = re.compile(r"""boundary=(?:"([^"]+)"|([^\s;]+))""", re.IGNORECASE)
_PARAM = r"""\b{}=(?:"([^"]*)"|([^\s;]+))"""


@dataclass(frozen=True)
class View:
    """One reading of a body: how it was decoded from the bytes as sent (`steps`), and what that gave."""

    steps: tuple[str, ...]
    data: bytes
    note: str = ""  # why a declared encoding could not be decoded ("" when it was, or none was declared)
    headers: tuple[tuple[str, str], ...] = ()  # a multipart part's own headers

    @property
    def encoding(self) -> str:
        """The steps in words: "" for the body as sent, "gzip, then multipart part \"f\""."""
        return ", then ".join(self.steps)


def views(body: bytes, headers: Sequence[tuple[str, str]] = ()) -> list[View]:
    """Every view of `body` (sent with `headers`): the body itself first, then each decoding of it, each of those
    decoded again (parents before children)."""
    found = _declared(body, _header(headers, "content-encoding"))
    content_type = _header(headers, "content-type") or ""
    seen = {view.data for view in found}
    queue = list(found)
    while queue and len(found) < MOST:
        view = queue.pop(0)
        if len(view.steps) >= DEPTH or not view.data:
            continue
        for child in _children(view, content_type):
            if child.data not in seen and len(found) < MOST:
                seen.add(child.data)
                found.append(child)
                queue.append(child)
    return found


def _header(headers: Sequence[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in headers if key.lower() == name), None)


def _declared(body: bytes, coding: str | None) -> list[View]:
    """The body, then what undoing its Content-Encoding gave (the last coding applied is undone first)."""
    codings = [c.strip().lower() for c in (coding or "").split(",") if c.strip().lower() not in ("", "identity")]
    found = [View((), body)]
    for name in reversed(codings):
        data, note = _undo(name, found[-1].data)
        if data is None:
            found.append(View((*found[-1].steps, name), b"", note=note))
            break
        found.append(View((*found[-1].steps, name), data))
    return found


def _undo(name: str, data: bytes) -> tuple[bytes | None, str]:
    """`data` with the content coding `name` undone, or None and why not."""
    if name in ("gzip", "x-gzip"):
        out = _inflate(data, 47)
    elif name == "deflate":  # zlib as the standard says, or raw deflate as some servers send
        out = _inflate(data, 15) if _compression(data) == "deflate" else _inflate(data, -15)
    elif name == "br":
        return _brotli(data)
    else:
        return None, f"the body is {name}-encoded, which the scan does not decode"
    return (out, "") if out is not None else (None, f"the body says {name} but does not decode as {name}")


def _compression(data: bytes) -> str | None:
    """The compression the bytes announce by their magic: gzip (1f 8b), zlib (78 xx, a multiple of 31), or None."""
    if data[:2] == b"\x1f\x8b":
        return "gzip"
    if len(data) > 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0:
        return "deflate"
    return None


def _inflate(data: bytes, wbits: int) -> bytes | None:
    """gzip (47: gzip or zlib), zlib (15) or raw deflate (-15), at most LIMIT bytes; None unless it decodes."""
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(data, LIMIT)
    except zlib.error:
        return None
    return out if out and (inflater.eof or len(out) >= LIMIT) else None


def _brotli(data: bytes) -> tuple[bytes | None, str]:
    try:
        import brotli  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        return None, "the body is br-encoded and was not decoded: the `brotli` module is not installed"
    try:
        out: bytes = brotli.Decompressor().process(data, output_buffer_limit=LIMIT)
    except brotli.error:
        return None, "the body says br but does not decode as br"
    return (out, "") if out else (None, "the body says br but decodes to nothing")


def _children(view: View, content_type: str) -> Iterator[View]:
    """What one view decodes to by itself: its compression, its multipart parts, a part's transfer encoding."""
    magic = _compression(view.data)
    if magic is not None:
        out = _inflate(view.data, 47 if magic == "gzip" else 15)
        if out is not None:
            yield View((*view.steps, magic), out)
    elif not _utf8(view.data):
        raw = _inflate(view.data, -15)
        if raw is not None:
            yield View((*view.steps, "raw deflate"), raw)
        out, _ = _brotli(view.data)
        if out is not None:
            yield View((*view.steps, "br"), out)
    yield from _transfer_decoded(view)
    yield from _parts(view, _header(view.headers, "content-type") or content_type)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _transfer_decoded(view: View) -> Iterator[View]:
    """A multipart part sent base64 or quoted-printable (Content-Transfer-Encoding), decoded."""
    encoding = (_header(view.headers, "content-transfer-encoding") or "").strip().lower()
    try:
        if encoding == "base64":
            yield View((*view.steps, "base64"), binascii.a2b_base64(view.data))
        elif encoding == "quoted-printable":
            yield View((*view.steps, "quoted-printable"), quopri.decodestring(view.data))
    except (binascii.Error, ValueError):
        return


def _parts(view: View, content_type: str) -> Iterator[View]:
    """Each part of a multipart body: the boundary its Content-Type names, else the one its first line opens."""
    boundary = _boundary(view.data, content_type)
    if boundary is None:
        return
    delimiter = b"--" + boundary
    for number, chunk in enumerate(view.data.split(delimiter)[1:], start=1):
        if chunk.startswith(b"--"):
            break  # the closing delimiter
        head, _, content = chunk.removeprefix(b"\r\n").removeprefix(b"\n").partition(b"\r\n\r\n")
        headers = tuple(
            (name.strip(), value.strip())
            for name, sep, value in (line.partition(":") for line in head.decode("latin-1").split("\r\n"))
            if sep
        )
        yield View((*view.steps, _part_name(number, headers)), content.removesuffix(b"\r\n"), headers=headers)


def _boundary(data: bytes, content_type: str) -> bytes | None:
    match = _BOUNDARY.search(content_type) if "multipart/" in content_type.lower() else None
    if match is not None:
        boundary = (match.group(1) or match.group(2)).encode("latin-1", "replace")
        if b"--" + boundary in data:
            return boundary
    first = data[:200].split(b"\n", 1)[0].rstrip(b"\r")
    if first.startswith(b"--") and len(first) > 4 and first + b"--" in data:  # a part list piped with no header
        return first[2:]
    return None


def _part_name(number: int, headers: Sequence[tuple[str, str]]) -> str:
    """The part's label, 'multipart part "f" (.env)': its form name and file name when it says them, else its number."""
    disposition = _header(headers, "content-disposition") or ""
    name, filename = (_param(disposition, key) for key in ("name", "filename"))
    label = f'"{name}"' if name else str(number)
    return f"multipart part {label}" + (f" ({filename})" if filename else "")


def _param(header: str, key: str) -> str:
    match = re.search(_PARAM.format(key), header, re.IGNORECASE)
    return (match.group(1) or match.group(2)) if match else ""
