"""The model gateway: the Anthropic Messages API, replaced at the HTTP boundary."""

from .scripted import ScriptedModel, text, tool_use
from .server import ModelGateway
from .wire import Exchange, ModelRequest

__all__ = ["Exchange", "ModelGateway", "ModelRequest", "ScriptedModel", "text", "tool_use"]
