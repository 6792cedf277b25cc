"""Cassettes: vcrpy YAML files with an index, atomic saves and scrubbing."""

from .store import Cassette, Interaction

__all__ = ["Cassette", "Interaction"]
