"""Crash injection: stop an agent at a chosen point, resume it, and judge the history it ends with.

Crash points, counted within one run (1-based):
- request N — when the agent's Nth model request reaches the gateway, before it is answered
- stream N  — halfway through streaming the Nth answer
- tool N    — inside the Nth tool call, while its PreToolUse hooks run (ClaudeAgent), or as the
              tool starts (LoopAgent)
- save N    — inside the Nth session save, after the new file is written and before it replaces
              the old one (LoopAgent's session store)

A process agent is SIGKILLed (its whole world: the CLI, its tools); an in-process agent gets its
connection cut (request, stream) or a `SimulatedCrash` raised at the point (tool, save), a
BaseException that no `except Exception` swallows.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError, ControlPlaneError
from .history.check import Problem, check_messages, check_transcript, lost_entries
from .errors import ours as __tracebackhide__  # our errors show without our frames

KINDS = ("request", "stream", "tool", "save")


class SimulatedCrash(BaseException):
    """Raised inside an in-process agent where a crash test stops it."""


class DropRequest(Exception):
    """Raised by a gateway observer: answer nothing and cut the connection."""


class HistoryInconsistent(AssertionError):
    """A session history (or a crash-and-resume) failed the consistency checks."""


@dataclass(frozen=True)
class CrashPoint:
    kind: str
    number: int

    @classmethod
    def parse(cls, value: Any) -> CrashPoint:
        if isinstance(value, CrashPoint):
            return value
        kind, _, number = str(value).replace(":", " ").partition(" ")
        if kind not in KINDS or not number.strip().isdigit() or int(number) < 1:
            raise ConfigError(f"Unknown crash point {value!r}; write 'request N', 'stream N', 'tool N' or 'save N' "
                              "(N counts from 1 within the run).")
        return cls(kind, int(number))

    def __str__(self) -> str:
        return f"{self.kind} {self.number}"


class Crasher:
    """Counts the points of one run and fires at the armed one (or only counts, with `point=None`)."""

    def __init__(self, session: Any, point: CrashPoint | None) -> None:
        self.session = session
        self.point = point
        self.seen: Counter[str] = Counter()
        self.fired = False

    def _reached(self, kind: str) -> bool:
        self.seen[kind] += 1
        hit = self.point is not None and not self.fired and self.point == CrashPoint(kind, self.seen[kind])
        if hit:
            self.fired = True
        return hit

    def on_request(self, request: Any) -> None:
        if self._reached("request"):
            self.session._kill_agent()
            raise DropRequest(str(self.point))
        if self._reached("stream"):
            self.session.gateway.interruptions[request.index] = self.session._kill_agent

    def on_tool(self, in_process: bool, settle: Callable[[], None] | None = None) -> None:
        """`settle`: called before the kill, to wait until the agent has recorded the call."""
        if self._reached("tool"):
            if settle is not None:
                settle()
            self.session._kill_agent()
            if in_process:
                raise SimulatedCrash(str(self.point))

    def on_save(self) -> None:
        if self._reached("save"):
            raise SimulatedCrash(str(self.point))

    def points(self) -> list[CrashPoint]:
        """Every point this (counting) run passed, in order of kind."""
        return [CrashPoint(kind, n) for kind in KINDS for n in range(1, self.seen[kind] + 1)]


@dataclass
class CrashResult:
    """One crash point: what the history looked like after the crash, and after the resume."""

    point: CrashPoint
    before: list[Problem] = field(default_factory=list)  # right after the crash (an unpaired tool_use is expected)
    after: list[Problem] = field(default_factory=list)  # after the resume: must be empty
    resumed: str = "resumed"  # or "started over" (nothing was saved), "resume failed"
    history: Any = None  # what was stored after the resume: transcript lines or messages

    @property
    def consistent(self) -> bool:
        return not [p for p in self.after if p.severity == "error"]

    def __str__(self) -> str:
        before = "; ".join(map(str, self.before)) or "consistent"
        after = "; ".join(map(str, self.after)) or "consistent"
        return f"{str(self.point):<10} after the crash: {before}\n{'':<10} {self.resumed}: {after}"


@dataclass
class CrashReport:
    """Every crash point of a run, each crashed, resumed and checked."""

    results: list[CrashResult]

    @property
    def inconsistent(self) -> list[CrashResult]:
        return [r for r in self.results if not r.consistent]

    def __str__(self) -> str:
        lines = [f"{len(self.results)} crash point(s), {len(self.results) - len(self.inconsistent)} consistent after "
                 "resume:"]
        lines.extend(str(result) for result in self.results)
        return "\n".join(lines)

    def assert_consistent(self) -> None:
        __tracebackhide__ = True
        if self.inconsistent:
            raise HistoryInconsistent(f"{len(self.inconsistent)} crash point(s) did not resume to one consistent "
                                      f"history.\n{self}")


def wait_until_recorded(world: Any, tool_use_id: str, seconds: float = 10.0) -> None:
    """A crash inside a tool's hooks comes after the Claude Code CLI has recorded the call: it appends the tool_use
    line to its transcript on its own time (measured: at times not yet, on a loaded machine), so wait for the line."""
    needle, deadline = tool_use_id.encode(), time.monotonic() + seconds
    projects = world.config_dir / "projects"
    while not any(needle in path.read_bytes() for path in projects.rglob("*.jsonl")):
        if time.monotonic() > deadline:
            return  # killed all the same: the report shows what was stored
        time.sleep(0.01)


def stored_history(session: Any, session_id: str) -> tuple[list[str] | list[dict[str, Any]] | None, str]:
    """What the agent has stored for `session_id`: transcript lines (kind "jsonl") or messages ("messages")."""
    try:
        path = session.agent.transcript(session.world, session_id)
    except ControlPlaneError:
        return None, "none"
    if not path.is_file():
        return None, "none"
    if path.suffix == ".jsonl":
        return path.read_text(encoding="utf-8").splitlines(), "jsonl"
    return session.agent.history(session.world, session_id), "messages"


def check_stored(history: Any, kind: str) -> list[Problem]:
    if kind == "jsonl":
        return check_transcript(history)
    if kind == "messages":
        return check_messages(history)
    return []


def lost(before: Any, after: Any, kind: str) -> list[Problem]:
    """What was stored before the crash and is missing after the resume."""
    if before is None or after is None:
        return []
    if kind == "jsonl":
        return lost_entries(before, after)
    if after[:len(before)] != before:
        return [Problem("lost-entry", None, "the messages stored before the crash are not the start of the history "
                                            "after the resume")]
    return []


def tool_use_ids(history: Any, kind: str) -> list[str]:
    if history is None:
        return []
    messages = [_message(line) for line in history] if kind == "jsonl" else history
    return [str(b.get("id")) for m in messages if isinstance(m, dict) and isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]




def _message(line: str) -> Any:
    """The message of one transcript line (None for a line a crash tore: the history check names it)."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry.get("message") if isinstance(entry, dict) else None
