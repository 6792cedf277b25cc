"""Where the gateway's answers come from: a cassette, the upstream API, or a scripted model."""

from __future__ import annotations

import http.client
import ipaddress
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..cassette import scrub
from ..cassette.store import METADATA_KEY, Cassette, Interaction
from ..errors import (
    CassetteNotFound,
    CassetteVersionMismatch,
    MissingApiKey,
    ReplayMiss,
    UnusedInteractions,
    UnusedScriptTurns,
    UpstreamError,
)
from .normalize import Templater
from .scripted import SOURCE, SOURCE_HEADER, ScriptedModel
from .wire import HOP_BY_HOP, Exchange, ModelRequest, assemble_message, header_value

DEFAULT_UPSTREAM = "https://api.anthropic.com"
CASSETTE_FORMAT = 2  # 2: request bodies may be deltas (cassette.delta); 1 still loads
# A replayed request that matched only once normalised: its JSON differs from the compact form the cassette keys
# (another client's spacing) or something varies that the quick key does not cut.  Still right, only slower.
NORMALISED_MATCH = "matched after normalising"
_FORWARD_DROPPED = frozenset({"host", "accept-encoding", "x-api-key", "authorization"}) | HOP_BY_HOP


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
            return [UnusedScriptTurns(
                f"The scripted model still has {self.model.remaining} turn(s) the agent never asked for "
                f"(it served {self.model.served}).",
                hint="Remove the extra turns, or find out why the agent stopped early.")]
        return []

    def close(self, *, save: bool) -> None:
        pass


class CassetteBackend:
    """replay / record / auto / live: a cassette, the upstream API, or both."""

    def __init__(self, mode: str, cassette: Path | None, upstream: str, api_key: str | None,
                 templater: Templater, record_command: str, budget: Any = None) -> None:
        self.mode = mode
        self.budget = budget
        self.path = cassette
        self.upstream = upstream.rstrip("/")
        self.api_key = api_key
        self.templater = templater
        self.record_command = record_command
        self.recorded: list[int] = []
        self.cassette: Cassette | None = None
        self.sources: set[str] = set()
        self.cli_versions: set[str] = set()
        if mode in ("record", "live", "auto") and not api_key and not is_loopback(self.upstream):
            raise MissingApiKey(
                f"{mode} mode forwards the agent's requests to {self.upstream}, and needs an API key: "
                "ANTHROPIC_API_KEY is not set in pytest's environment.",
                hint="Set ANTHROPIC_API_KEY, or run from the cassettes with `--agent-mode=replay`.")
        if mode in ("replay", "auto") and cassette is not None and cassette.is_file():
            self.cassette = Cassette.load(cassette)  # a corrupt file fails here, before the agent runs
        elif mode in ("record", "auto") and cassette is not None:
            self.cassette = Cassette(cassette)

    # --- answering -----------------------------------------------------------------------------

    def respond(self, request: ModelRequest) -> Exchange:
        if self.mode in ("replay", "auto") and self.cassette is not None and self.cassette.interactions:
            position = self._lookup(request)
            if position is not None:
                response = self.templater.expand_response(self.cassette.play(position))
                notes = [NORMALISED_MATCH] if position in self.cassette.normalised_matches else []
                return Exchange(request, response, "cassette", interaction=position, notes=notes)
        if self.mode == "replay":
            raise self._miss(request)
        return self._forward(request)

    def _lookup(self, request: ModelRequest) -> int | None:
        assert self.cassette is not None
        recorded = self.cassette.provenance.get("claude_cli_version")
        running = request.claude_cli_version
        if recorded and running and recorded != running and self.mode == "replay":
            raise CassetteVersionMismatch(
                f"Cassette {self.cassette.path} was recorded with Claude Code CLI {recorded}, but this run "
                f"uses CLI {running}; its prompts differ, so its requests cannot match.",
                path=self.cassette.path,
                hint=f"Re-record it: {self.record_command} — or install the claude-agent-sdk that bundles "
                     f"CLI {recorded} (`controlplane` pins it in the dev extra).")
        body = self.templater.template_body(request.body)
        return self.cassette.find(request.method, request.route, body)

    def _miss(self, request: ModelRequest) -> Exception:
        if self.cassette is None:
            assert self.path is not None
            return CassetteNotFound(
                f"Cassette {self.path} does not exist, and replay mode never calls the real model "
                f"(the agent sent {request.method} {request.path}).",
                path=self.path, hint=f"Record it: {self.record_command}")
        body = self.templater.template_body(request.body)
        position, diff = self.cassette.closest(request.method, request.route, body)
        played = len(self.cassette.interactions) - len(self.cassette.unused())
        where = (f"closest recorded request: interaction #{position}" if position is not None
                 else "the cassette holds no request for this path")
        return ReplayMiss(
            f"Request #{request.index + 1} ({request.method} {request.path}) matches no unplayed interaction "
            f"of cassette {self.cassette.path} ({len(self.cassette.interactions)} recorded, {played} played); "
            f"{where}.\nDiff (recorded -> sent now, normalised):\n{diff or '(identical bodies: already played)'}",
            request=request, diff=diff,
            hint=f"If the agent changed on purpose, re-record: {self.record_command}")

    def _forward(self, request: ModelRequest) -> Exchange:
        if self.budget is not None:
            self.budget.check()
        url = urlsplit(self.upstream)
        connection_class = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _FORWARD_DROPPED}
        headers["accept-encoding"] = "identity"  # store readable bodies
        agent_key = request.header("x-api-key") or request.header("authorization")
        if self.api_key:
            headers["x-api-key"] = self.api_key
        elif request.header("x-api-key"):
            headers["x-api-key"] = request.header("x-api-key")
        elif request.header("authorization"):
            headers["authorization"] = request.header("authorization")
        try:
            connection = connection_class(url.hostname, url.port, timeout=600)
            connection.request(request.method, url.path.rstrip("/") + request.path, body=request.body,
                               headers=headers)
            upstream = connection.getresponse()
            body = upstream.read()
            response_headers: dict[str, list[str]] = {}
            for key, value in upstream.getheaders():
                response_headers.setdefault(key, []).append(value)
            connection.close()
        except OSError as error:
            raise UpstreamError(
                f"Cannot reach the upstream API at {self.upstream}: {error}.",
                hint="Check the network or `--agent-upstream`; replay mode (`--agent-mode=replay`) needs none.")
        response = {"status": {"code": upstream.status, "message": upstream.reason},
                    "headers": response_headers, "body": {"string": body}}
        exchange = Exchange(request, response, "upstream")
        if self.budget is not None and upstream.status == 200:
            answer = assemble_message(response) or {}
            self.budget.charge(str(answer.get("model") or (request.json or {}).get("model") or ""),
                               answer.get("usage") or {})
        if self.cassette is not None and self.mode != "live":
            exchange.interaction = self._store(request, response, secrets=[self.api_key, agent_key])
        return exchange

    def _store(self, request: ModelRequest, response: dict[str, Any], secrets: list[str | None]) -> int:
        assert self.cassette is not None
        self.sources.add(describe_source(self.upstream, response))
        if request.claude_cli_version:
            self.cli_versions.add(request.claude_cli_version)
        body = scrub.secrets(secrets, self.templater.template_body(request.body))
        stored = self.templater.template_response({
            "status": dict(response["status"]),
            "headers": scrub.response_headers(response["headers"]),
            "body": {"string": scrub.secrets(secrets, response["body"]["string"])},
        })
        interaction = Interaction(request.method, self.upstream + request.path, body,
                                  scrub.request_headers(request.headers), stored, plays=1)
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
        return [UnusedInteractions(
            f"Cassette {self.cassette.path} has {len(unused)} interaction(s) the agent never asked for "
            f"(#{', #'.join(map(str, unused))} of {len(self.cassette.interactions)}): the agent now stops "
            "earlier than when it was recorded.",
            path=self.cassette.path,
            hint=f"Re-record it if that is intended: {self.record_command} — or mark the test "
                 "`@pytest.mark.agent(allow_unused=True)`.")]

    def close(self, *, save: bool) -> None:
        if not save or self.cassette is None or not self.recorded or self.mode not in ("record", "auto"):
            return
        from .. import __version__

        previous = self.cassette.provenance
        sources = sorted(self.sources | ({previous["source"]} if previous.get("source") else set()))
        versions = sorted(self.cli_versions | ({previous["claude_cli_version"]}
                                                if previous.get("claude_cli_version") else set()))
        self.cassette.metadata[METADATA_KEY] = {
            "format": CASSETTE_FORMAT,
            "source": "; ".join(sources),
            "claude_cli_version": versions[-1] if versions else None,
            "recorded_by": f"pytest-controlplane {__version__}",
            "templated": sorted(self.templater.roots),
        }
        self.cassette.save()


def api_key_from_env() -> str | None:
    return os.environ.get("ANTHROPIC_API_KEY") or None
