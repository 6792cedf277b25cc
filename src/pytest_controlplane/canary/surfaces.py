"""The places a secret can leak to, as bytes to scan, each able to say where in it a find lies.

Structured data (request and response bodies, SDK messages) is flattened into its string leaves,
so a location reads `messages[2].content[0].content` and JSON escapes are already decoded; a
streamed response is reassembled first (a canary split across SSE deltas is whole again), a
gzip-encoded body is decompressed.  Files and logs stay bytes and are located by line.
"""

from __future__ import annotations

import bisect
import dataclasses
import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError

KINDS = (
    "request",
    "request headers",
    "response",
    "sdk message",
    "transcript",
    "session store",
    "file",
    "stdout",
    "stderr",
    "cassette",
    "network",
    "text",
)


@dataclass
class Surface:
    """Bytes to scan, what they are (`kind`, one of KINDS) and which one (`name`: "request #3", a path)."""

    kind: str
    name: str
    data: bytes
    path: str | None = None  # the file, for files
    fields: list[tuple[int, str]] = field(default_factory=list)  # (offset, location) of flattened leaves
    _last: tuple[int, int] = field(default=(0, 1), repr=False)

    @classmethod
    def from_json(cls, kind: str, name: str, value: Any) -> Surface:
        parts: list[bytes] = []
        fields: list[tuple[int, str]] = []
        offset = 0
        for location, text in _leaves(value, ""):
            encoded = text.encode("utf-8", "surrogatepass")
            fields.append((offset, location))
            parts.append(encoded)
            offset += len(encoded) + 1
        return cls(kind, name, b"\n".join(parts), fields=fields)

    @classmethod
    def from_file(
        cls, kind: str, path: str | os.PathLike[str], shown: str | None = None, data: bytes | None = None
    ) -> Surface | None:
        if data is None:
            try:
                data = Path(path).read_bytes()
            except OSError:
                return None
        return cls(kind, f"{kind} {shown or os.fspath(path)}", _decompressed(data), path=os.fspath(path))

    def bounds(self, offset: int) -> tuple[int, int]:
        """The field (or line) `offset` lies in, as byte offsets: a snippet stays inside it."""
        if self.fields:
            starts = [start for start, _ in self.fields]
            index = max(bisect.bisect_right(starts, offset) - 1, 0)
            end = starts[index + 1] - 1 if index + 1 < len(starts) else len(self.data)
            return starts[index], end
        start = self.data.rfind(b"\n", 0, offset) + 1
        end = self.data.find(b"\n", offset)
        return start, end if end != -1 else len(self.data)

    def locate(self, offset: int) -> str:
        """Where `offset` lies: the JSON path of a leaf, or a line number."""
        if self.fields:
            index = bisect.bisect_right([start for start, _ in self.fields], offset) - 1
            return self.fields[max(index, 0)][1] or "(top level)"
        return f"line {self._line(offset)}"

    def _line(self, offset: int) -> int:
        # Finds come in order: count newlines from the previous one, not from the start every time.
        last_offset, last_line = self._last if self._last[0] <= offset else (0, 1)
        line = last_line + self.data.count(b"\n", last_offset, offset)
        self._last = (offset, line)
        return line


def surfaces_of(source: Any) -> Iterator[Surface]:
    """Every surface of an AgentSession, or the surfaces a str/bytes/Path/Surface (or a list of them) stands for."""
    if isinstance(source, Surface):
        yield source
    elif isinstance(source, str):
        yield Surface("text", "text", source.encode("utf-8", "surrogatepass"))
    elif isinstance(source, bytes | bytearray):
        yield Surface("text", "bytes", _decompressed(bytes(source)))
    elif isinstance(source, os.PathLike):
        found = Surface.from_file("file", source)
        if found is not None:
            yield found
    elif isinstance(source, list | tuple):
        for item in source:
            yield from surfaces_of(item)
    elif hasattr(source, "gateway") and hasattr(source, "effects"):
        yield from _session_surfaces(source)
    else:
        raise ConfigError(
            f"Cannot scan {type(source).__name__}.",
            hint="Pass an agent_session, text, bytes, a Path or a list of them.",
        )


def exchange_surfaces(index: int, exchange: Any) -> Iterator[Surface]:
    """What one model exchange carried: the request body and headers, and the response (reassembled)."""
    from ..codings import UndecodableBody, decoded_response
    from ..wire import assemble_message

    number = index + 1
    request = exchange.request
    body = _decompressed(request.body or b"")
    try:
        yield Surface.from_json("request", f"request #{number}", json.loads(body))
    except ValueError:
        yield Surface("request", f"request #{number}", body)
    yield Surface.from_json("request headers", f"request #{number} headers", dict(request.headers))
    try:
        plain = decoded_response(exchange.response)
    except UndecodableBody:  # scanned as stored: an undecodable body hides nothing it could show
        plain = exchange.response
    message = assemble_message(plain)
    if message is not None:
        yield Surface.from_json("response", f"response #{number}", message)
    else:
        raw = plain["body"]["string"] or b""
        yield Surface("response", f"response #{number}", raw.encode() if isinstance(raw, str) else raw)


def _session_surfaces(session: Any) -> Iterator[Surface]:
    for index, exchange in enumerate(session.gateway.exchanges):
        yield from exchange_surfaces(index, exchange)
    for index, message in enumerate(session.messages):
        yield message_surface(index, message)
    for number, outcome in enumerate(session.runs, start=1):
        if outcome.stdout:
            yield Surface("stdout", f"run {number} stdout", outcome.stdout.encode("utf-8", "replace"))
        if outcome.stderr:
            yield Surface("stderr", f"run {number} stderr", "\n".join(outcome.stderr).encode("utf-8", "replace"))
    effects = session.effects
    seen: set[str] = set()
    for change in reversed(effects.changes):  # the latest version of each file
        if change.path in seen or change.after is None or change.after.kind != "file":
            continue
        seen.add(change.path)
        kind = "transcript" if change.bookkeeping and change.path.endswith(".jsonl") else "file"
        surface = Surface.from_file(kind, change.path, change.shown_as)
        if surface is None:  # deleted since: the version the snapshot kept
            kept = effects.contents.read(change.after.digest)
            surface = Surface.from_file(kind, change.path, change.shown_as, data=kept) if kept is not None else None
        if surface is not None:
            yield surface
    for index, sent in enumerate(effects.egress, start=1):  # what left over the world network (effects/egress.py)
        yield network_surface(index, sent)
    store = Path(session.world.session_store_dir)
    if store.is_dir():
        for path in sorted(store.rglob("*")):
            if path.is_file():
                found = Surface.from_file("session store", path, path.name)
                if found is not None:
                    yield found
    cassette = getattr(session.gateway, "cassette_path", None)
    if cassette is not None and Path(cassette).is_file():
        found = Surface.from_file("cassette", cassette)
        if found is not None:
            yield found


def network_surface(index: int, sent: Any) -> Surface:
    """One attempt to reach the outside: the host asked for (a DNS name's labels too), the path, headers and body."""
    record = sent.record
    fields = {"host": record.host or record.address, "path": record.path or "", "body": record.body}
    fields.update({f"header {key}": value for key, value in record.headers})
    views = record.views() if hasattr(record, "views") else []  # the body inflated, each multipart part: bodies.py
    fields.update({f"body, {view.encoding}": view.data for view in views[1:] if view.data})
    return Surface.from_json("network", f"network #{index} ({record.kind} {record.host or record.address})", fields)


def message_surface(index: int, message: Any) -> Surface:
    """One message of the SDK's stream (a dataclass of claude-agent-sdk, or anything JSON-like)."""
    return Surface.from_json("sdk message", f"SDK message #{index + 1} ({type(message).__name__})", _plain(message))


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _leaves(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield f"a key of {path or 'the top level'}", str(key)
            yield from _leaves(item, f"{path}.{key}".lstrip("."))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")
    elif isinstance(value, str):
        yield path, value
    elif isinstance(value, bytes):
        yield path, value.decode("utf-8", "replace")


def _decompressed(data: bytes) -> bytes:
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError):
            return data
    return data
