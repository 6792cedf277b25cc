"""What never reaches a cassette: credentials, organisation ids, request ids, cookies."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..wire import HOP_BY_HOP

SCRUBBED_REQUEST_HEADERS = frozenset({"x-api-key", "authorization", "cookie", "proxy-authorization", "host"})
SCRUBBED_RESPONSE_HEADERS = frozenset(
    {"set-cookie", "anthropic-organization-id", "request-id", "x-request-id", "cf-ray", "x-envoy-upstream-service-time"}
)
REDACTED = "<scrubbed>"
_DROPPED_REQUEST = SCRUBBED_REQUEST_HEADERS | HOP_BY_HOP
_DROPPED_RESPONSE = SCRUBBED_RESPONSE_HEADERS | HOP_BY_HOP


def request_headers(headers: Mapping[str, str]) -> dict[str, list[str]]:
    # x-stainless-*: the SDK's telemetry (OS, arch, runtime, retry count), machine-specific and never matched;
    # x-controlplane-*: ours, saying how the run was set up (who chose the CLI: gateway/releases.py), not the agent.
    return {
        k: [v]
        for k, v in headers.items()
        if k.lower() not in _DROPPED_REQUEST and not k.lower().startswith(("x-stainless-", "x-controlplane-"))
    }


def response_headers(headers: Mapping[str, Any]) -> dict[str, list[str]]:
    kept = {}
    for key, value in headers.items():
        if key.lower() in _DROPPED_RESPONSE:
            continue
        kept[key] = list(value) if isinstance(value, list | tuple) else [value]
    return kept


def secrets(values: Iterable[str | None], data: bytes) -> bytes:
    """Replace every occurrence of the given secret values in `data`."""
    for value in values:
        if value and len(value) >= 8:
            data = data.replace(value.encode(), REDACTED.encode())
    return data
