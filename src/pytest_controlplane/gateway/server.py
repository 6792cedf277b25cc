"""ModelGateway: a local HTTP server that stands where the Anthropic Messages API would be.

Point any agent at ``gateway.base_url`` (ANTHROPIC_BASE_URL) and it runs for real while its
model answers come from a cassette, a script or the upstream API.  Whatever goes wrong while
the agent runs (a replay miss, an exhausted script) is answered with a non-retryable 403 in
the API's error shape — the CLI retries 5xx for minutes — and kept in `problems`, so the test
fails with the real cause instead of the agent's paraphrase of it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from .. import codings, wire
from ..errors import CassetteCorrupt, ConfigError, ControlPlaneError, UnusedScriptTurns, ours
from ..wire import Exchange, ModelRequest, api_error, header_value, json_response
from .backends import DEFAULT_UPSTREAM, REPLAY_ADVICE, CassetteBackend, ScriptBackend, api_key_from_env
from .handler import Handler, Server
from .rerecord import RecordCommand, library_command
from .scripted import ScriptedModel
from .templating import Templater

__tracebackhide__ = ours  # our errors show without our frames

MODES = ("replay", "record", "auto", "live", "script")
MISS_STATUS = 403  # answered once by the CLI and the SDK: no retries, no minutes of backoff


class DropRequest(Exception):
    """Raised by a gateway observer: answer nothing and cut the connection."""


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
        record_command: RecordCommand = library_command,
        budget: Any = None,
        record_errors: bool = False,
        replay_advice: str = REPLAY_ADVICE,
        test_id: str | None = None,
        stand_in: str | None = None,
    ) -> None:
        """`record_command`: how to record a cassette again, given what it says of how it was made (rerecord.py).
        `budget`: a gateway.budget.Budget that record/auto/live calls to the upstream API count against.
        `record_errors`: store an upstream error answer (after retries) as the recorded answer instead of failing.
        `replay_advice`: how to do without the API, said when a request needs a key that is not set.
        `test_id`: the test recording, named to a stand-in on this machine (see scripted.ScriptPerTest).
        `stand_in`: the FILE.py:NAME of the scripted model the upstream serves (stand_in.py), kept in the cassette."""
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
        self.stand_in = stand_in
        self.templater = Templater(roots)
        self.exchanges: list[Exchange] = []
        # Called with each request as it arrives, before it is answered (the effects oracle snapshots there);
        # one that raises DropRequest makes the gateway answer nothing and cut the connection.
        self.observers: list[Callable[[ModelRequest], None]] = []
        # Applied to each request body as it arrives, before anything reads it (the observers, the cassette, the
        # upstream): text the test's own machinery put into what the agent sends, put back to what the user wrote.
        self.rewriters: list[Callable[[bytes], bytes]] = []
        # Request index -> called halfway through streaming its answer, after which the connection is cut.
        self.interruptions: dict[int, Callable[[], None]] = {}
        # The last run was cut short by a simulated crash: the turns scripted for what would have followed are not
        # leftovers.
        self.cut_short = False
        self.problems: list[ControlPlaneError] = []
        self._lock = threading.Lock()
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._backend: ScriptBackend | CassetteBackend | None = None
        self._script = script

    # --- configuration while open --------------------------------------------------------------

    def set_roots(self, roots: Mapping[str, str | PathLike[str]]) -> None:
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
            self._backend = CassetteBackend(
                self.mode,
                self.cassette_path,
                self.upstream,
                self.api_key,
                self.templater,
                self.record_command,
                self.budget,
                record_errors=self.record_errors,
                replay_advice=self.replay_advice,
                test_id=self.test_id,
                stand_in=self.stand_in,
            )
        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.gateway = self
        self._thread = threading.Thread(
            target=self._server.serve_until_stopped, name="controlplane-gateway", daemon=True
        )
        self._thread.start()

    def close(self, *, save: bool = True) -> None:
        """Stop serving; in record/auto mode save the cassette (unless `save` is false or a problem occurred)."""
        if self._server is not None:
            self._server.stop()
            self._server.server_close()
            self._server = None
            for exchange in list(self.exchanges):  # answers still going out: their threads finish first
                if not exchange.served.wait(wire.ANSWER_WAIT):
                    exchange.notes.append(
                        f"still being sent {wire.ANSWER_WAIT:g} s after the gateway closed (the client stopped reading)"
                    )
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
                if not (self.cut_short and isinstance(leftover, UnusedScriptTurns)):
                    raise leftover

    def take_problem(self) -> ControlPlaneError | None:
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

    def answer(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Exchange:
        """Answer one request as the HTTP handler received it (the observers see it first); kept in `exchanges`."""
        with self._lock:
            for rewrite in self.rewriters:
                body = rewrite(body)
            request = ModelRequest(method, path, headers, body, index=len(self.exchanges))
            route = request.route
            try:
                for observe in list(self.observers):
                    observe(request)
            except DropRequest:
                exchange = Exchange(
                    request, api_error(499, "dropped", "cut by a crash test"), "gateway", notes=["dropped"]
                )
                self.exchanges.append(exchange)
                return exchange
            if method == "POST" and route == "/v1/messages/count_tokens":
                exchange = Exchange(request, json_response(200, {"input_tokens": max(1, len(body) // 4)}), "gateway")
            elif method == "POST" and route == "/v1/messages" and not isinstance(request.json, dict):
                # What the real API answers; no backend should be asked (a scripted model would answer it).
                exchange = Exchange(
                    request,
                    api_error(
                        400,
                        "invalid_request_error",
                        "The request body is not a JSON object (pytest-controlplane's model gateway).",
                    ),
                    "gateway",
                )
            elif method == "POST" and route == "/v1/messages":
                exchange = self._from_backend(request)
            else:
                exchange = Exchange(
                    request,
                    api_error(
                        404,
                        "not_found_error",
                        f"pytest-controlplane's model gateway serves POST /v1/messages and /v1/messages/count_tokens "
                        f"only, not {method} {route}.",
                    ),
                    "gateway",
                )
            self.exchanges.append(exchange)
            return exchange

    def _from_backend(self, request: ModelRequest) -> Exchange:
        assert self._backend is not None
        try:
            return self._as_the_client_takes_it(self._backend.respond(request))
        except ControlPlaneError as error:
            self.problems.append(error)
            first_line = str(error).splitlines()[0]
            return Exchange(
                request,
                api_error(
                    MISS_STATUS,
                    "permission_error",
                    f"pytest-controlplane: {first_line} (the test fails with the details)",
                ),
                "gateway",
                notes=[type(error).__name__],
            )

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
                f"for a client that does not accept {coding}: {error}.",
                path=where,
                hint="Install what the message names, or re-record the cassette.",
            ) from error
        exchange.notes.append(f"sent decoded: the client does not accept {coding}")
        return exchange
