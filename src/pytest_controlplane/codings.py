"""HTTP content codings (gzip, deflate, br, zstd): what a stored body says once decoded, and whether a client
takes it encoded.

The real API compresses its answers (event streams included) for any client that accepts it, and cassettes
recorded by other tools keep those bytes as they came.  The gateway serves them as stored to a client that
accepts the coding and decoded to one that does not; oracles and reports read them decoded.  Neutral: used by
the gateway, the cassette, the canary scan and the report alike.
"""

from __future__ import annotations

import gzip
import zlib
from typing import Any

IDENTITY = frozenset({"", "identity"})


class UndecodableBody(ValueError):
    """A body whose content coding is unknown, unavailable here, or whose bytes are not in that coding."""


def codings(value: str) -> list[str]:
    """The codings of a Content-Encoding header, in the order they were applied."""
    return [part.strip().lower() for part in value.split(",") if part.strip().lower() not in IDENTITY]


def decode(data: bytes, content_encoding: str) -> bytes:
    """`data` with every coding of `content_encoding` undone (last applied, first undone)."""
    for coding in reversed(codings(content_encoding)):
        data = _decode_one(data, coding)
    return data


def _decode_one(data: bytes, coding: str) -> bytes:
    try:
        if coding in ("gzip", "x-gzip"):
            return gzip.decompress(data)
        if coding == "deflate":
            try:
                return zlib.decompress(data)  # RFC 9110's deflate: a zlib stream
            except zlib.error:
                return zlib.decompress(data, -zlib.MAX_WBITS)  # what some servers send: raw deflate
        if coding == "br":
            return _module("brotli", "br").decompress(data)
        if coding == "zstd":
            return _module("zstandard", "zstd").ZstdDecompressor().decompressobj().decompress(data)
    except UndecodableBody:
        raise
    except Exception as error:  # gzip.BadGzipFile, zlib.error, brotli.error, zstd errors, EOFError
        raise UndecodableBody(f"the body is not valid {coding} ({type(error).__name__}: {error})") from error
    raise UndecodableBody(f"unknown content coding {coding!r}")


def _module(name: str, coding: str) -> Any:
    try:
        return __import__(name)
    except ImportError as error:
        raise UndecodableBody(
            f"the body is {coding}-encoded and the {name!r} package is not installed (`pip install {name}`)"
        ) from error


def accepts(accept_encoding: str, content_encoding: str) -> bool:
    """Whether a client that sent `Accept-Encoding: accept_encoding` takes a body coded `content_encoding`."""
    wanted = codings(content_encoding)
    if not wanted:
        return True
    quality: dict[str, float] = {}
    for item in accept_encoding.split(","):
        name, _, params = item.strip().lower().partition(";")
        value = 1.0
        for param in params.split(";"):
            key, _, number = param.strip().partition("=")
            if key == "q":
                try:
                    value = float(number)
                except ValueError:
                    value = 0.0
        if name:
            quality[name.strip()] = value
    star = quality.get("*", 0.0)
    return all(quality.get(c, quality.get("gzip" if c == "x-gzip" else c, star)) > 0 for c in wanted)


def header(headers: dict[str, Any], name: str) -> str:
    for key, values in headers.items():
        if key.lower() == name:
            return values[0] if isinstance(values, list) and values else str(values or "")
    return ""


def decoded_response(response: dict[str, Any]) -> dict[str, Any]:
    """A response (vcrpy's shape) with its body decoded and its Content-Encoding gone; the same object when it
    is not encoded.  Raises UndecodableBody."""
    headers = response.get("headers") or {}
    coding = header(headers, "content-encoding")
    if not codings(coding):
        return response
    body = response["body"]["string"] or b""
    body = body.encode("utf-8", "surrogateescape") if isinstance(body, str) else body
    return {
        **response,
        "body": {**response["body"], "string": decode(body, coding)},
        "headers": {k: v for k, v in headers.items() if k.lower() != "content-encoding"},
    }
