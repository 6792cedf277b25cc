"""ModelGateway: a local HTTP server that stands where the Anthropic Messages API would be.

Point any agent at ``gateway.base_url`` (ANTHROPIC_BASE_URL) and it runs for real while its
model answers come from a cassette, a script or the upstream API.  Whatever goes wrong while
the agent runs (a replay miss, an exhausted script) is answered with a non-retryable 403 in
the API's error shape — the CLI retries 5xx for minutes — and kept in `problems`, so the test
fails with the real cause instead of the agent's paraphrase of it.
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from os import PathLike
from pathlib import Path
from typing import Any

from .. import codings
from ..crash import DropRequest
from ..errors import CassetteCorrupt, ConfigError, ControlPlaneError
from .backends import DEFAULT_UPSTREAM, REPLAY_ADVICE, CassetteBackend, ScriptBackend, api_key_from_env
from .normalize import Templater
from .scripted import ScriptedModel
from .wire import HOP_BY_HOP, Exchange, ModelRequest, api_error, header_value, is_sse, json_response
from ..errors import ours as __tracebackhide__  # our errors show without our frames

MODES = ("replay", "record", "auto", "live", "script")
MISS_STATUS = 403  # answered once by the CLI and the SDK: no retries, no minutes of backoff


class ModelGateway:
    """The model, replaced at the HTTP boundary.  Use as a context manager; `.base_url` while open."""

    def __init__(
        self,
        mode: str = "replay",
        cassette: str | PathLike[str] | None = None,
        upstream: str | None = None,
        script: ScriptedModel | Any = None,
        *,
        roots: dict[str, str | PathLike[str]] | None = None,
        api_key: str | None = None,
        record_command: str = "run again with `--agent-mode=record` (pytest) or mode='record'",
        budget: Any = None,
        record_errors: bool = False,
        replay_advice: str = REPLAY_ADVICE,
        test_id: str | None = None,
    ) -> None:
        """`budget`: a gateway.budget.Budget that record/auto/live calls to the upstream API count against.
        `record_errors`: store an upstream error answer (after retries) as the recorded answer instead of failing.
        `replay_advice`: how to do without the API, said when a request needs a key that is not set.
        `test_id`: the test recording, named to a stand-in on this machine (see scripted.ScriptPerTest)."""
        if mode not in MODES:
            raise ConfigError(f"Unknown gateway mode {mode!r}; valid modes: {', '.join(MODES)}.")
        if mode == "script" and script is None:
            raise ConfigError("mode='script' needs script=ScriptedModel([...]) (or a list of turns).")
        if mode in ("replay", "record", "auto") and cassette is None and script is None:
            raise ConfigError(f"mode={mode!r} needs cassette=PATH.")
        self.mode = "script" if script is not None else mode
        self.cassette_path = Path(cassette) if cassette is not None else None
        self.upstream = upstream or DEFAULT_UPSTREAM
        self.api_key = api_key if api_key is not None else api_key_from_env()
        self.record_command = record_command
        self.budget = budget
        self.record_errors = record_errors
        self.replay_advice = replay_advice
        self.test_id = test_id
        self.templater = Templater(roots)
        self.exchanges: list[Exchange] = []
        # Called with each request as it arrives, before it is answered (the effects oracle snapshots there);
        # one that raises crash.DropRequest makes the gateway answer nothing and cut the connection.
        self.observers: list[Callable[[ModelRequest], None]] = []
        # Request index -> called halfway through streaming its answer, after which the connection is cut.
        self.interruptions: dict[int, Callable[[], None]] = {}
        self.problems: list[ControlPlaneError] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._backend: ScriptBackend | CassetteBackend | None = None
        self._script = script

    # --- configuration while open --------------------------------------------------------------

    def set_roots(self, roots: dict[str, str | PathLike[str]]) -> None:
        """The directories to template as {{name}} in cassettes (the test's workspace, HOME, ...)."""
        self.templater = Templater(roots)
        if isinstance(self._backend, CassetteBackend):
            self._backend.templater = self.templater

    def use_script(self, script: ScriptedModel | Any) -> ScriptedModel:
        """Serve a scripted model from now on, whatever the mode."""
        model = script if isinstance(script, ScriptedModel) else ScriptedModel(script)
        with self._lock:
            self.mode, self._script = "script", model
            self._backend = ScriptBackend(model)
        return model

    @property
    def script(self) -> ScriptedModel | None:
        return self._backend.model if isinstance(self._backend, ScriptBackend) else None

    # --- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> ModelGateway:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close(save=exc_info[0] is None)

    def open(self) -> None:
        if self._script is not None:
            self.use_script(self._script)
        else:
            self._backend = CassetteBackend(self.mode, self.cassette_path, self.upstream, self.api_key,
                                            self.templater, self.record_command, self.budget,
                                            record_errors=self.record_errors, replay_advice=self.replay_advice,
                                            test_id=self.test_id)
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.gateway = self
        self._thread = threading.Thread(target=self._server.serve_until_stopped, name="controlplane-gateway",
                                        daemon=True)
        self._thread.start()

    def close(self, *, save: bool = True) -> None:
        """Stop serving; in record/auto mode save the cassette (unless `save` is false or a problem occurred)."""
        if self._server is not None:
            self._server.stop()
            self._server.server_close()
            self._server = None
            for exchange in list(self.exchanges):  # answers still going out: their threads finish first
                exchange.served.wait(10)
        if self._backend is not None:
            self._backend.close(save=save and not self.problems)

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise ConfigError("The gateway is not open: use `with ModelGateway(...) as gateway:`.")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # --- outcome -------------------------------------------------------------------------------

    def leftovers(self) -> list[ControlPlaneError]:
        """Recorded interactions or scripted turns that were never asked for."""
        return self._backend.leftovers() if self._backend is not None else []  # type: ignore[return-value]

    def unplayed(self) -> int:
        """Recorded interactions a replay has not played (yet)."""
        cassette = getattr(self._backend, "cassette", None)
        return len(cassette.unused()) if cassette is not None and self.mode == "replay" else 0

    def check(self, *, allow_unused: bool = False) -> None:
        """Raise the first problem not yet reported (a miss, an exhausted script), else any leftovers.

        Leftovers after a problem are its consequence, not news, so they are not raised then.
        """
        unreported = [p for p in self.problems if not getattr(p, "reported", False)]
        if unreported:
            raise unreported[0]
        if not self.problems and not allow_unused:
            for leftover in self.leftovers():
                raise leftover

    def report(self) -> ControlPlaneError | None:
        """The first problem not yet reported, marked as reported (for callers that raise it themselves)."""
        for problem in self.problems:
            if not getattr(problem, "reported", False):
                problem.reported = True  # type: ignore[attr-defined]
                return problem
        return None

    @property
    def requests(self) -> list[ModelRequest]:
        return [e.request for e in self.exchanges]

    # --- serving -------------------------------------------------------------------------------

    def _answer(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Exchange:
        with self._lock:
            request = ModelRequest(method, path, headers, body, index=len(self.exchanges))
            route = request.route
            try:
                for observe in list(self.observers):
                    observe(request)
            except DropRequest:
                exchange = Exchange(request, api_error(499, "dropped", "cut by a crash test"), "gateway",
                                    notes=["dropped"])
                self.exchanges.append(exchange)
                return exchange
            if method == "POST" and route == "/v1/messages/count_tokens":
                exchange = Exchange(request, json_response(200, {"input_tokens": max(1, len(body) // 4)}), "gateway")
            elif method == "POST" and route == "/v1/messages" and not isinstance(request.json, dict):
                # What the real API answers; no backend should be asked (a scripted model would answer it).
                exchange = Exchange(request, api_error(400, "invalid_request_error",
                                                       "The request body is not a JSON object (pytest-controlplane's "
                                                       "model gateway)."), "gateway")
            elif method == "POST" and route == "/v1/messages":
                exchange = self._from_backend(request)
            else:
                exchange = Exchange(request, api_error(
                    404, "not_found_error",
                    f"pytest-controlplane's model gateway serves POST /v1/messages and /v1/messages/count_tokens "
                    f"only, not {method} {route}."), "gateway")
            self.exchanges.append(exchange)
            return exchange

    def _from_backend(self, request: ModelRequest) -> Exchange:
        assert self._backend is not None
        try:
            return self._as_the_client_takes_it(self._backend.respond(request))
        except ControlPlaneError as error:
            self.problems.append(error)
            first_line = str(error).splitlines()[0]
            return Exchange(request, api_error(MISS_STATUS, "permission_error",
                                               f"pytest-controlplane: {first_line} (the test fails with the details)"),
                            "gateway", notes=[type(error).__name__])


    def _as_the_client_takes_it(self, exchange: Exchange) -> Exchange:
        """A stored body in a content coding the client did not ask for (a cassette recorded by an httpx client,
        replayed to one that accepts less) is sent decoded; otherwise the stored bytes go out as they are."""
        coding = header_value(exchange.response, "content-encoding")
        if not codings.codings(coding) or codings.accepts(exchange.request.header("accept-encoding"), coding):
            return exchange
        try:
            exchange.response = codings.decoded_response(exchange.response)
        except codings.UndecodableBody as error:
            where = self.cassette_path or "the upstream"
            raise CassetteCorrupt(
                f"Interaction #{exchange.interaction} of {where} has a {coding}-encoded body that cannot be decoded "
                f"for a client that does not accept {coding}: {error}.", path=where,
                hint="Install what the message names, or re-record the cassette.") from error
        exchange.notes.append(f"sent decoded: the client does not accept {coding}")
        return exchange


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # subagents and parallel tool calls connect at once; a full backlog costs a 1 s SYN retry
    gateway: ModelGateway

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A fault of the gateway itself while serving: kept as a problem that fails the test, never printed to
        stderr as a bare traceback (socketserver's default)."""
        import traceback

        from ..errors import GatewayError

        self.gateway.problems.append(GatewayError(
            f"The model gateway failed while serving {client_address[0]}:{client_address[1]}: "
            f"{traceback.format_exc(limit=-3).strip()}",
            hint="This is a bug in pytest-controlplane: please report it with the text above."))

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
                    self._handle_request_noblock()
        finally:
            self._stopped.set()

    def stop(self) -> None:
        self._wake_writer.send(b"x")
        self._stopped.wait()
        self._wake_reader.close()
        self._wake_writer.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # A streamed answer goes out event by event: with Nagle's algorithm each write after the first waits for the
    # client's delayed ACK (~20-40 ms on loopback), which made every in-process model call cost that much.
    disable_nagle_algorithm = True
    server: _Server

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
        exchange = gateway._answer(self.command, self.path, dict(self.headers.items()), body)
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
                    return self._refuse(f"a chunk size {size[:20]!r} that is not hexadecimal")
                if int(size, 16) == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return body
                body += self.rfile.read(int(size, 16))
                self.rfile.readline(65537)
        value = self.headers.get("content-length") or "0"
        if not value.strip().isdigit():
            return self._refuse(f"Content-Length {value!r}, which is not a length")
        length = int(value)
        return self.rfile.read(length) if length else b""

    def _refuse(self, what: str) -> None:
        self.close_connection = True
        try:
            self._send(api_error(400, "invalid_request_error", f"pytest-controlplane's model gateway: the request has "
                                                               f"{what}."))
        except (BrokenPipeError, ConnectionResetError):
            pass
        return None

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
            events = [body[:len(body) // 2], body[len(body) // 2:]] if encoded else _events(body)
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

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        name = name.lower()
        for key, value in self.items():
            if key.lower() == name:
                return value
        return default


def _events(body: bytes) -> list[bytes]:
    """The raw SSE body cut after each blank line, so each event is sent as it was recorded."""
    parts = body.replace(b"\r\n", b"\n").split(b"\n\n")
    return [part + b"\n\n" for part in parts if part.strip()]
