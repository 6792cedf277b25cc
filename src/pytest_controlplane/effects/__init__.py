"""The effects oracle: snapshots of the real filesystem around agent runs, and what changed."""

from .diff import Change
from .oracle import Effects, EffectViolation
from .snapshot import Contents, Entry, Snapshot, snapshot

__all__ = ["Change", "Contents", "EffectViolation", "Effects", "Entry", "Snapshot", "snapshot"]
