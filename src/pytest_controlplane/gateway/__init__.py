"""The model gateway: the Anthropic Messages API, replaced at the HTTP boundary.

Names load on first use, so that `gateway.normalize` (which the cassette store needs) imports
without the server, which needs the cassette store.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {"ScriptedModel": ".scripted", "text": ".scripted", "tool_use": ".scripted", "ModelGateway": ".server",
            "Exchange": ".wire", "ModelRequest": ".wire"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name], __name__), name)
