"""Where the gateway's answers come from: a cassette, the upstream API, or a scripted model."""

from __future__ import annotations

import email.utils
import http.client
import ipaddress
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..cassette import malformed, scrub
from ..cassette.store import METADATA_KEY, Cassette, Interaction
from ..errors import (
    CassetteNotFound,
    MissingApiKey,
    ReplayMiss,
    UnusedInteractions,
    UnusedScriptTurns,
    UpstreamError,
    ours,
)
from ..wire import CHOSEN_BY_HEADER, HOP_BY_HOP, Exchange, ModelRequest, header_value, is_sse, parse_sse
from . import releases, rerecord
from .scripted import SOURCE, SOURCE_HEADER, TEST_HEADER, ScriptedModel
from .templating import Templater

__tracebackhide__ = ours  # our errors show without our frames

DEFAULT_UPSTREAM = "https://api.anthropic.com"
# What a busy API answers (rate limited, overloaded, a gateway in between failing): tried again, a few times.
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
MAX_ATTEMPTS = 4
MAX_RETRY_WAIT = 60.0  # seconds; a longer retry-after is cut to this
UPSTREAM_TIMEOUT = 600
REPLAY_ADVICE = "run from the cassettes with `--agent-mode=replay`"
CASSETTE_FORMAT = 2  # 2: request bodies may be deltas (cassette.delta); 1 still loads
# A replayed request that matched only once normalised: its JSON differs from the compact form the cassette keys
# (another client's spacing) or something varies that the quick key does not cut.  Still right, only slower.
NORMALISED_MATCH = "matched after normalising"
STAND_IN_ORIGIN = "http://stand-in.invalid"  # what a stand-in's recordings name: its port changes with each run
_FORWARD_DROPPED = frozenset({"host", "accept-encoding", "x-api-key", "authorization", CHOSEN_BY_HEADER}) | HOP_BY_HOP


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def describe_source(upstream: str, response: dict[str, Any]) -> str:
    """Where a recorded response came from, said plainly; never claims Claude unless it was."""
    if header_value(response, SOURCE_HEADER) == SOURCE:
        return "scripted model (pytest_controlplane.ScriptedModel served as a stand-in API), not Claude"
    host = urlsplit(upstream).hostname or upstream
    if host == "api.anthropic.com":
        return "Anthropic API (api.anthropic.com)"
    return f"stand-in server at {upstream} (not the Anthropic API)"


class ScriptBackend:
    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    def respond(self, request: ModelRequest) -> Exchange:
        return Exchange(request, self.model.respond(request), "script")

    def leftovers(self) -> list[Exception]:
        if self.model.remaining:
            return [
                UnusedScriptTurns(
                    f"The scripted model still has {self.model.remaining} turn(s) the agent never asked for "
                    f"(it served {self.model.served}).",
                    hint="Remove the extra turns, or find out why the agent stopped early.",
                )
            ]
        return []

    def close(self, *, save: bool) -> None:
        pass


class CassetteBackend:
    """replay / record / auto / live: a cassette, the upstream API, or both."""

    def __init__(
        self,
        mode: str,
        cassette: Path | None,
        upstream: str,
        api_key: str | None,
        templater: Templater,
        record_command: rerecord.RecordCommand,
        budget: Any = None,
        record_errors: bool = False,
        replay_advice: str = REPLAY_ADVICE,
        test_id: str | None = None,
        stand_in: str | None = None,
    ) -> None:
        self.mode = mode
        self.test_id = test_id
        self.replay_advice = replay_advice
        self.record_errors = record_errors
        self.budget = budget
        self.path = cassette
        self.upstream = upstream.rstrip("/")
        self.api_key = api_key
        self.templater = templater
        self.stand_in = stand_in
        self.record_command = record_command({})
        self.recorded: list[int] = []
        self.cassette: Cassette | None = None
        self.sources: set[str] = set()
        self.cli_versions: set[str] = set()
        self.sdk_versions: set[str] = set()  # the Claude Agent SDK that drove the CLI, when its User-Agent says
        if mode in ("replay", "auto") and cassette is not None and cassette.is_file():
            # A corrupt file fails here, before the agent runs; the hints say how to record it as it was made.
            self.cassette, self.record_command = rerecord.load(cassette, record_command)
            malformed.refuse(self.cassette, self.record_command)  # a malformed recorded answer fails here too
        elif mode in ("record", "auto") and cassette is not None:
            self.cassette = Cassette(cassette)

    # --- answering -----------------------------------------------------------------------------

    def respond(self, request: ModelRequest) -> Exchange:
        if self.mode in ("replay", "auto") and self.cassette is not None and self.cassette.interactions:
            position = self._lookup(request)
            if position is not None:
                response = self.templater.expand_response(self.cassette.play(position))
                notes = [NORMALISED_MATCH] if position in self.cassette.normalised_matches else []
                if across := self._across(request):
                    notes.append(releases.note(*across))
                return Exchange(request, response, "cassette", interaction=position, notes=notes)
        if self.mode == "replay":
            raise self._miss(request)
        return self._forward(request)

    def _across(self, request: ModelRequest) -> tuple[str, str] | None:
        """(recorded, running) when this replay runs another CLI release than the cassette's."""
        if self.mode != "replay" or self.cassette is None:
            return None
        return releases.releases(self.cassette.provenance.get("claude_cli_version"), request)

    def _lookup(self, request: ModelRequest) -> int | None:
        assert self.cassette is not None
        across = self._across(request)
        if across and not releases.chosen_by(request):  # the default CLI: the user may not know it changed
            raise releases.mismatch(self.cassette.path, across[0], request, self.record_command)
        body = self.templater.template_body(request.body)
        return self.cassette.find(request.method, request.route, body, across_releases=across is not None)

    def _miss(self, request: ModelRequest) -> Exception:
        if self.cassette is None:
            assert self.path is not None
            return CassetteNotFound(
                f"Cassette {self.path} does not exist, and replay mode never calls the real model "
                f"(the agent sent {request.method} {request.path}).",
                path=self.path,
                hint=f"Record it: {self.record_command}",
            )
        across = self._across(request)
        body = self.templater.template_body(request.body)
        position, diff = self.cassette.closest(request.method, request.route, body, across_releases=bool(across))
        played = len(self.cassette.interactions) - len(self.cassette.unused())
        where = (
            f"closest recorded request: interaction #{position}"
            if position is not None
            else "the cassette holds no request for this path"
        )
        releases_ = f"; {releases.ACROSS_RELEASES}: recorded on {across[0]}, running {across[1]}" if across else ""
        return ReplayMiss(
            f"Request #{request.index + 1} ({request.method} {request.path}) matches no unplayed interaction "
            f"of cassette {self.cassette.path} ({len(self.cassette.interactions)} recorded, {played} played"
            f"{releases_}); {where}.\nDiff (recorded -> sent now, {'the conversation' if across else 'normalised'}):"
            f"\n{diff or '(identical bodies: already played)'}",
            request=request,
            diff=diff,
            hint=releases.miss_hint(*across, request, self.record_command)
            if across
            else f"If the agent changed on purpose, re-record: {self.record_command}",
        )

    def _forward(self, request: ModelRequest) -> Exchange:
        # The key is asked for only now, when a request really goes upstream: a scripted test, or an auto run whose
        # cassettes hold every answer, never needs one.
        if not self.api_key and not is_loopback(self.upstream):
            raise MissingApiKey(
                f"{self.mode} mode sends request #{request.index + 1} to {self.upstream}, which needs an API key, and "
                "ANTHROPIC_API_KEY is not set.",
                hint=f"Set ANTHROPIC_API_KEY, or {self.replay_advice}.",
            )
        if self.budget is not None:
            self.budget.check()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _FORWARD_DROPPED}
        headers["accept-encoding"] = "identity"  # store readable bodies
        agent_key = request.header("x-api-key") or request.header("authorization")
        if self.api_key:
            headers["x-api-key"] = self.api_key
        elif request.header("x-api-key"):
            headers["x-api-key"] = request.header("x-api-key")
        elif request.header("authorization"):
            headers["authorization"] = request.header("authorization")
        if self.test_id and is_loopback(self.upstream):
            headers[TEST_HEADER] = self.test_id  # a stand-in plays each test its own script
        response, attempts = self._call_upstream(request, headers)
        exchange = Exchange(request, response, "upstream", notes=attempts)
        status = exchange.status
        if self.budget is not None and status == 200:
            answer = exchange.answer or {}
            self.budget.charge(
                str(answer.get("model") or (request.json or {}).get("model") or ""), answer.get("usage") or {}
            )
        if status != 200 and not self.record_errors:
            # An error is not the model's answer: storing it would make every replay fail the same way.
            raise UpstreamError(
                f"The upstream API at {self.upstream} answered request #{request.index + 1} with {status} "
                f"{response['status'].get('message') or ''}: {_excerpt(response)}"
                + (f" (after {len(attempts) + 1} attempts: {'; '.join(attempts)})" if attempts else "")
                + ("; nothing was recorded." if self.mode in ("record", "auto") else "."),
                hint=_upstream_hint(status),
            )
        if self.cassette is not None and self.mode != "live":
            exchange.interaction = self._store(request, response, secrets=[self.api_key, agent_key])
        return exchange

    def _call_upstream(self, request: ModelRequest, headers: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
        """The upstream's answer, retrying (bounded, honouring retry-after) what a busy API answers or a dropped
        connection; the attempts that failed, as notes.  A stream cut midway is an UpstreamError."""
        url = urlsplit(self.upstream)
        connection_class = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        failed: list[str] = []
        for attempt in range(1, MAX_ATTEMPTS + 1):
            # No host name (http://:8080) passes None, which the socket layer takes as loopback; the stubs say str.
            connection = connection_class(url.hostname, url.port, timeout=UPSTREAM_TIMEOUT)  # type: ignore[arg-type]
            try:
                connection.request(
                    request.method, url.path.rstrip("/") + request.path, body=request.body, headers=headers
                )
                upstream = connection.getresponse()
                response_headers: dict[str, list[str]] = {}
                for key, value in upstream.getheaders():
                    response_headers.setdefault(key, []).append(value)
                status = {"code": upstream.status, "message": upstream.reason}
                try:
                    body = upstream.read()
                except http.client.IncompleteRead as error:
                    raise self._cut(request, upstream.status, len(error.partial), attempt) from error
            except (OSError, http.client.HTTPException) as error:  # refused, reset, dropped before an answer
                failed.append(f"{type(error).__name__}: {error or 'no answer'}")
                if attempt == MAX_ATTEMPTS:
                    raise UpstreamError(
                        f"Cannot reach the upstream API at {self.upstream}: {'; '.join(failed)} "
                        f"({attempt} attempts); nothing was recorded.",
                        hint="Check the network or `--agent-upstream`; replay mode (`--agent-mode=replay`) needs none.",
                    ) from error
                time.sleep(_backoff(attempt))
                continue
            finally:
                connection.close()
            response = {"status": status, "headers": response_headers, "body": {"string": body}}
            if status["code"] in RETRIED_STATUSES and attempt < MAX_ATTEMPTS:
                failed.append(f"{status['code']} {_excerpt(response, 80)}")
                time.sleep(_retry_after(response_headers, attempt))
                continue
            if status["code"] == 200 and is_sse(response) and not _stream_complete(body):
                raise self._cut(request, 200, len(body), attempt)
            return response, failed
        raise AssertionError("unreachable")

    def _cut(self, request: ModelRequest, status: int, received: int, attempt: int) -> UpstreamError:
        return UpstreamError(
            f"The upstream API at {self.upstream} cut its answer to request #{request.index + 1} midway ({status}, "
            f"{received} bytes received, no message_stop; attempt {attempt}): the stream is incomplete, so nothing "
            "was recorded.",
            hint="Run the test again; if it keeps happening, check the upstream (a proxy with a short timeout?).",
        )

    def _store(self, request: ModelRequest, response: dict[str, Any], secrets: list[str | None]) -> int:
        assert self.cassette is not None
        self.sources.add(describe_source(self.upstream, response))
        if request.claude_cli_version:
            self.cli_versions.add(request.claude_cli_version)
        if request.agent_sdk_version:
            self.sdk_versions.add(request.agent_sdk_version)
        body = scrub.secrets(secrets, self.templater.template_body(request.body))
        stored = self.templater.template_response(
            {
                "status": dict(response["status"]),
                "headers": scrub.response_headers(response["headers"]),
                "body": {"string": scrub.secrets(secrets, response["body"]["string"])},
            }
        )
        origin = STAND_IN_ORIGIN if self.stand_in else self.upstream
        interaction = Interaction(
            request.method, origin + request.path, body, scrub.request_headers(request.headers), stored, plays=1
        )
        position = self.cassette.add(interaction)
        self.recorded.append(position)
        return position

    # --- closing -------------------------------------------------------------------------------

    def leftovers(self) -> list[Exception]:
        if self.mode != "replay" or self.cassette is None:
            return []
        unused = self.cassette.unused()
        if not unused:
            return []
        return [
            UnusedInteractions(
                f"Cassette {self.cassette.path} has {len(unused)} interaction(s) the agent never asked for "
                f"(#{', #'.join(map(str, unused))} of {len(self.cassette.interactions)}): the agent now stops "
                "earlier than when it was recorded.",
                path=self.cassette.path,
                hint=f"Re-record it if that is intended: {self.record_command} — or mark the test "
                "`@pytest.mark.agent(allow_unused=True)`.",
            )
        ]

    def close(self, *, save: bool) -> None:
        if not save or self.cassette is None or not self.recorded or self.mode not in ("record", "auto"):
            return
        from importlib.metadata import version

        previous = self.cassette.provenance
        sources = sorted(self.sources | ({previous["source"]} if previous.get("source") else set()))
        versions, sdks = (
            sorted(seen | ({previous[key]} if previous.get(key) else set()))
            for seen, key in ((self.cli_versions, "claude_cli_version"), (self.sdk_versions, "agent_sdk_version"))
        )
        self.cassette.metadata[METADATA_KEY] = {
            "format": CASSETTE_FORMAT,
            "source": "; ".join(sources),
            "claude_cli_version": versions[-1] if versions else None,
            "agent_sdk_version": sdks[-1] if sdks else None,
            "recorded_by": f"pytest-controlplane {version('pytest-controlplane')}",
            "templated": sorted(self.templater.roots),
            **({"script": script} if (script := self.stand_in or previous.get("script")) else {}),
        }
        self.cassette.save()


def _backoff(attempt: int) -> float:
    return min(MAX_RETRY_WAIT, 0.5 * 2 ** (attempt - 1))


def _retry_after(headers: dict[str, list[str]], attempt: int) -> float:
    """The wait the upstream asked for (seconds or an HTTP date), else exponential backoff; at most a minute."""
    value = next((v[0] for k, v in headers.items() if k.lower() == "retry-after" and v), "").strip()
    if value:
        try:
            return max(0.0, min(MAX_RETRY_WAIT, float(value)))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value) if email.utils.parsedate_tz(value) else None
            if when is not None:
                return max(0.0, min(MAX_RETRY_WAIT, when.timestamp() - time.time()))
    return _backoff(attempt)


def _stream_complete(body: bytes) -> bool:
    """An event stream that reached its end: a message_stop, or an error event (which is the answer)."""
    return any(event.event in ("message_stop", "error") for event in parse_sse(body))


def _excerpt(response: dict[str, Any], limit: int = 300) -> str:
    body = response["body"]["string"] or b""
    text = (body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)).strip()
    return (text[:limit] + "…") if len(text) > limit else (text or "(empty body)")


def _upstream_hint(status: int) -> str:
    if status in (401, 403):
        return (
            "Check ANTHROPIC_API_KEY (or the stand-in's key) and `--agent-upstream`; to record this error as the "
            "test's answer on purpose, mark it `@pytest.mark.agent(record_errors=True)`."
        )
    if status in RETRIED_STATUSES:
        return (
            "The API stayed busy through every retry: run again later; to record this error as the test's "
            "answer on purpose, mark it `@pytest.mark.agent(record_errors=True)`."
        )
    return (
        "The error body above says why the API refused the request; to record it as the test's answer on "
        "purpose, mark it `@pytest.mark.agent(record_errors=True)`."
    )


def api_key_from_env() -> str | None:
    return os.environ.get("ANTHROPIC_API_KEY") or None
