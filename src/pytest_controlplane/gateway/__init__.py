"""The model gateway: the Anthropic Messages API, replaced at the HTTP boundary."""

from .scripted import ScriptedModel, text, tool_use
from .server import DropRequest, ModelGateway

__all__ = ["DropRequest", "ModelGateway", "ScriptedModel", "text", "tool_use"]
