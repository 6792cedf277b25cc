"""The cassette shapes found in agent projects, read into one: vcrpy's own, and what other tools write.

- **vcrpy** (YAML or JSON serializer): a request ``body`` that is a string, ``!!binary`` bytes or null; a
  response ``{"status": {"code", "message"}, "headers", "body": {"string": str | bytes}}``.  A body stored
  as ``{"base64_string": ...}`` (serializers that keep binary bodies in JSON) is decoded.
- **pydantic-ai's vcrpy serializer**: JSON bodies kept as ``parsed_body`` (a YAML mapping of the JSON),
  request and response alike; event streams as literal text.
- **cassetter** (pydantic-ai's later recorder): ``body: {type: json | text | binary | none, content}`` and a
  bare ``status: 200``.

A body written as a mapping is matched by JSON value (its key order and spacing are not what the client
sends).  Anything else fails with the interaction and the key that was not understood.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from ..wire import SseEvent, encode_sse


class UnknownShape(ValueError):
    """A part of a cassette that no known writer produces."""


def read(data: Any) -> tuple[list[tuple[str, str, bytes, dict[str, list[str]], dict[str, Any]]], dict[str, Any]]:
    """(method, uri, request body, request headers, response in vcrpy's shape) per interaction, and the metadata."""
    if isinstance(data, list) and data and isinstance(data[0], dict) and "request" in data[0]:
        raise UnknownShape("it is in the format of vcrpy before 1.0 (a bare list of interactions); re-record it")
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        found = sorted(data)[:6] if isinstance(data, dict) else type(data).__name__
        raise UnknownShape(f"it has no `interactions` list (found {found})")
    interactions = []
    for number, item in enumerate(data["interactions"]):
        where = f"interaction {number}"
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("request"), dict)
            or not isinstance(item.get("response"), dict)
        ):
            raise UnknownShape(f"{where} is not a mapping with `request` and `response`")
        request = item["request"]
        for key in ("method", "uri"):
            if not isinstance(request.get(key), str):
                raise UnknownShape(f"{where}: the request has no `{key}`")
        headers = {
            str(k): [str(x) for x in v] if isinstance(v, list) else [str(v)]
            for k, v in (request.get("headers") or {}).items()
        }
        body = _body(request, f"{where}: the request")
        interactions.append((request["method"], request["uri"], body, headers, _response(item["response"], where)))
    metadata = data.get("metadata")
    return interactions, metadata if isinstance(metadata, dict) else {}


def _response(response: dict[str, Any], where: str) -> dict[str, Any]:
    status = response.get("status")
    if isinstance(status, int):
        status = {"code": status, "message": ""}
    if not isinstance(status, dict) or not isinstance(status.get("code"), int):
        raise UnknownShape(f"{where}: the response has no status code (found {status!r})")
    headers = response.get("headers") or {}
    if not isinstance(headers, dict):
        raise UnknownShape(f"{where}: the response headers are not a mapping")
    headers = {str(k): [str(x) for x in v] if isinstance(v, list) else [str(v)] for k, v in headers.items()}
    if "body" not in response and "parsed_body" not in response:
        raise UnknownShape(f"{where}: the response has no `body` (nor `parsed_body`)")
    body = _body(response, f"{where}: the response", response_body=True)
    return {
        "status": {"code": status["code"], "message": str(status.get("message") or "")},
        "headers": headers,
        "body": {"string": body},
    }


def _body(part: dict[str, Any], where: str, *, response_body: bool = False) -> bytes:
    if "parsed_body" in part:
        return _json_or_events(part["parsed_body"])
    body = part.get("body")
    if response_body and isinstance(body, dict) and "string" in body:
        body = body["string"]
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, dict) and "base64_string" in body:
        return _base64(body["base64_string"], where)
    if isinstance(body, dict) and "type" in body:  # cassetter
        kind, content = body["type"], body.get("content")
        if kind == "json":
            return _json_or_events(content)
        if kind == "text":
            return (content or "").encode("utf-8")
        if kind == "binary":
            return content if isinstance(content, bytes) else _base64(content, where)
        if kind == "none":
            return b""
        raise UnknownShape(f"{where} body has type {kind!r} (known: json, text, binary, none)")
    raise UnknownShape(
        f"{where} body is a {type(body).__name__} with keys {sorted(body)[:6] if isinstance(body, dict) else ''}"
        " (known: a string, !!binary, {string: ...}, {base64_string: ...}, parsed_body, "
        "{type, content})"
    )


def _json_or_events(value: Any) -> bytes:
    """A body kept as data: a JSON value, or an event stream kept as a list of {event, data} events."""
    if isinstance(value, list) and value and all(isinstance(e, dict) and "data" in e for e in value):
        return encode_sse(
            [
                SseEvent(
                    e.get("event"),
                    e["data"] if isinstance(e["data"], str) else json.dumps(e["data"], separators=(",", ":")),
                )
                for e in value
            ]
        )
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _base64(text: Any, where: str) -> bytes:
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, TypeError, ValueError) as error:
        raise UnknownShape(f"{where} body is not valid base64 ({error})") from error
