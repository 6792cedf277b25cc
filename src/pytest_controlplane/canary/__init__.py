"""Canaries: mint, plant, and find every leak, in any encoding, on every surface."""

from .canary import PREFIX, Canary, CanaryLeaked, Leak, Plantings, find_leaks
from .surfaces import Surface, surfaces_of

__all__ = ["PREFIX", "Canary", "CanaryLeaked", "Leak", "Plantings", "Surface", "find_leaks", "surfaces_of"]
