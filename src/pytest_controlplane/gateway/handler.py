"""The gateway's HTTP/1.1 server: requests read without http.server's email parser, answers written in one
piece (an event stream event by event), framing errors answered in the API's error shape."""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from .. import codings
from ..wire import HOP_BY_HOP, api_error, header_value, is_sse

if TYPE_CHECKING:
    from .server import ModelGateway


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # subagents and parallel tool calls connect at once; a full backlog costs a 1 s SYN retry
    gateway: ModelGateway
    server_address: tuple[str, int]  # once bound, its AF_INET socket's name (the stubs allow bytes, for binding)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A fault of the gateway itself while serving: kept as a problem that fails the test, never printed to
        stderr as a bare traceback (socketserver's default)."""
        import traceback

        from ..errors import GatewayError

        self.gateway.problems.append(
            GatewayError(
                f"The model gateway failed while serving {client_address[0]}:{client_address[1]}: "
                f"{traceback.format_exc(limit=-3).strip()}",
                hint="This is a bug in pytest-controlplane: please report it with the text above.",
            )
        )

    def server_activate(self) -> None:
        super().server_activate()
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._stopped = threading.Event()

    def serve_until_stopped(self) -> None:
        """serve_forever without its polling: `stop` wakes the loop at once (a replayed test used to wait for
        the next poll, and a short poll costs the agent GIL switches while it runs)."""
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self, selectors.EVENT_READ)
                selector.register(self._wake_reader, selectors.EVENT_READ)
                while not any(key.fileobj is self._wake_reader for key, _ in selector.select()):
                    self._handle_request_noblock()  # type: ignore[attr-defined]  # socketserver's, private
        finally:
            self._stopped.set()

    def stop(self) -> None:
        self._wake_writer.send(b"x")
        self._stopped.wait()
        self._wake_reader.close()
        self._wake_writer.close()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # A streamed answer goes out event by event: with Nagle's algorithm each write after the first waits for the
    # client's delayed ACK (~20-40 ms on loopback), which made every in-process model call cost that much.
    disable_nagle_algorithm = True
    server: Server
    raw_requestline: bytes  # set by handle_one_request before parse_request; the stubs do not declare it

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # the gateway's ledger is the log

    def parse_request(self) -> bool:
        """An HTTP/1.1 request line and its headers, read without the email parser http.server uses (which took
        a third of the gateway's time per model call); anything else goes the standard way."""
        self.started = time.perf_counter()  # the request line is in: the gateway's time starts
        words = self.raw_requestline.split()
        if len(words) != 3 or words[2] != b"HTTP/1.1":
            return super().parse_request()
        self.command, self.path, self.request_version = (word.decode("latin-1") for word in words)
        self.requestline = self.raw_requestline.decode("latin-1").rstrip("\r\n")
        headers = _Headers()
        for _ in range(200):
            line = self.rfile.readline(65537)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip()] = value.strip()
        else:
            self.send_error(431, "Too many request headers")
            return False
        self.headers = headers  # type: ignore[assignment]
        self.close_connection = headers.get("connection", "").lower() == "close"
        if headers.get("expect", "").lower() == "100-continue":  # curl, for a large body
            return self.handle_expect_100()
        return True

    def _handle(self) -> None:
        body = self._body()
        if body is None:
            return
        gateway = self.server.gateway
        exchange = gateway.answer(self.command, self.path, dict(self.headers.items()), body)
        try:
            if "dropped" in exchange.notes:
                self.close_connection = True
                return
            self._send(exchange.response, gateway.interruptions.pop(exchange.request.index, None))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the agent went away (killed, timed out): nothing to tell it
        finally:
            exchange.finish(time.perf_counter() - self.started)

    do_POST = do_GET = do_PUT = do_DELETE = _handle

    def _body(self) -> bytes | None:
        """The request body (Content-Length or chunked); None when the framing is broken, after answering 400 in the
        API's error shape and closing the connection (its next bytes cannot be found)."""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = self.rfile.readline(65537).split(b";")[0].strip()
                if not size or not all(c in b"0123456789abcdefABCDEF" for c in size):
                    self._refuse(f"a chunk size {size[:20]!r} that is not hexadecimal")
                    return None
                if int(size, 16) == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return body
                body += self.rfile.read(int(size, 16))
                self.rfile.readline(65537)
        value = self.headers.get("content-length") or "0"
        if not value.strip().isdigit():
            self._refuse(f"Content-Length {value!r}, which is not a length")
            return None
        length = int(value)
        return self.rfile.read(length) if length else b""

    def _refuse(self, what: str) -> None:
        self.close_connection = True
        try:
            self._send(
                api_error(400, "invalid_request_error", f"pytest-controlplane's model gateway: the request has {what}.")
            )
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send(self, response: dict[str, Any], interrupt: Callable[[], None] | None = None) -> None:
        status = response["status"]
        code = int(status["code"])
        head = [f"HTTP/1.1 {code} {status.get('message') or self.responses.get(code, ('',))[0]}"]
        for key, values in response.get("headers", {}).items():
            if key.lower() in HOP_BY_HOP:
                continue
            head += (f"{key}: {value}" for value in (values if isinstance(values, list) else [values]))
        body = response["body"]["string"] or b""
        if isinstance(body, str):
            body = body.encode()
        if is_sse(response):
            # Event by event, as the real API streams; a compressed stream as stored (its events are not bytes
            # of their own), in two halves so that a crash test can still cut it midway.
            self.wfile.write(("\r\n".join(head) + "\r\ntransfer-encoding: chunked\r\n\r\n").encode("latin-1"))
            encoded = codings.codings(header_value(response, "content-encoding"))
            events = [body[: len(body) // 2], body[len(body) // 2 :]] if encoded else _events(body)
            for number, chunk in enumerate(events):
                if interrupt is not None and number == max(1, len(events) // 2):
                    interrupt()  # a crash test: the rest of the answer never comes
                    self.close_connection = True
                    return
                if chunk:  # an empty chunk would end the stream
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        else:
            if interrupt is not None:
                interrupt()  # a crash test: no answer at all
                self.close_connection = True
                return
            # One write: status, headers and body leave together.
            self.wfile.write(("\r\n".join(head) + f"\r\ncontent-length: {len(body)}\r\n\r\n").encode("latin-1") + body)
        self.wfile.flush()


class _Headers(dict[str, str]):
    """Request headers as sent (names keep their case), looked up by name in any case."""

    def get(self, name: str, default: Any = None) -> Any:
        name = name.lower()
        for key, value in self.items():
            if key.lower() == name:
                return value
        return default


def _events(body: bytes) -> list[bytes]:
    """The raw SSE body cut after each blank line, so each event is sent as it was recorded."""
    parts = body.replace(b"\r\n", b"\n").split(b"\n\n")
    return [part + b"\n\n" for part in parts if part.strip()]
