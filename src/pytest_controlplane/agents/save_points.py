"""Save points of a process agent written in Python: its writes to the session store, counted and one cut off.

A `sitecustomize` (in save_hook/) first on the agent's PYTHONPATH wraps file writes in the store's directory;
see its docstring for what it covers.  Python processes only, and not under `python -S` or `-I` (no site, or no
PYTHONPATH): other agents (the Claude Code CLI, a Node or Go agent, a shell script) get no save points, and
crash_everywhere finds their request and stream points as before.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOOK_DIR = Path(__file__).with_name("save_hook")


@dataclass(frozen=True)
class SaveHook:
    """One run's save points: the store's directory, the log the processes write, the save to cut (or None)."""

    store: Path
    log: Path
    armed: int | None

    def env(self, pythonpath: str | None) -> dict[str, str]:
        """The variables that load the hook, ahead of the agent's own PYTHONPATH."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        for stale in self.log.parent.glob(f"{self.log.name}*"):
            stale.unlink()
        path = os.pathsep.join([str(HOOK_DIR)] + ([pythonpath] if pythonpath else []))
        return {
            "PYTHONPATH": path,
            "CONTROLPLANE_STORE": str(self.store),
            "CONTROLPLANE_SAVE_LOG": str(self.log),
            "CONTROLPLANE_CRASH_SAVE": str(self.armed or ""),
        }

    def saves(self) -> list[dict[str, Any]]:
        """The saves of the run, in order: {"save": n, "path", "cut": bool, "kept": the file before the cut save}."""
        if not self.log.is_file():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line.strip()]

    def before_cut(self) -> Path | None:
        """The store file as it was before the save that was cut (None: it did not exist, or nothing was cut)."""
        kept = next((save["kept"] for save in self.saves() if save["cut"]), None)
        return Path(kept) if kept else None
