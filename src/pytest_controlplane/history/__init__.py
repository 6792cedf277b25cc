"""Session histories: Claude Code JSONL transcripts and message lists."""

from .transcript import read_transcript

__all__ = ["read_transcript"]
