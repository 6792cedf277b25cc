"""Effects: what an agent really did to the filesystem, run by run and tool call by tool call.

    session.run("Tidy up")
    session.effects.assert_not_written(".env")        # under any name that reaches it
    session.effects.assert_unchanged_outside()        # HOME, TMPDIR, watched sentinels
    assert session.effects.written == ["notes.md"]

Each run is bracketed by snapshots of the workspace, HOME, TMPDIR, the agent's config dir and any
watched paths, with checkpoints in between: every model request (the agent runs a response's
tool calls before its next request) and, where the adapter can see them, the moments just before
and after each tool call.  A change between two checkpoints is attributed to the call they bracket.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError, ControlPlaneFailure, ours
from .attribution import Checkpoint, HookWindow, attribute, by_hooks, intervals, tool_uses_by_request
from .cli_own import world_bookkeeping
from .diff import Change, compare
from .egress import EgressOracle
from .explain import route_to
from .reads import ReadOracle
from .routes import aliases, normalise
from .snapshot import Contents, Snapshot, absolute, snapshot, under

__tracebackhide__ = ours  # our errors show without our frames


def _own_folders(changes: list[Change]) -> None:
    """A folder created for nothing but the runtime's own files is its own too (the CLI's `mkdir -p ~/.config/git`);
    an empty one stays the agent's."""
    for change in sorted(changes, key=lambda c: -len(c.path)):
        if change.kind == "created" and change.after is not None and change.after.kind == "dir":
            inside = [c for c in changes if c.path.startswith(change.path + "/")]
            change.bookkeeping = change.bookkeeping or (bool(inside) and all(c.bookkeeping for c in inside))


class EffectViolation(ControlPlaneFailure):
    """An effects assertion failed; the message shows each offending change, its route and the tool call."""


@dataclass
class _Run:
    number: int
    roots: tuple[str, ...]
    checkpoints: list[Checkpoint] = field(default_factory=list)
    calls: dict[Any, Any] = field(default_factory=dict)  # tool_use id -> (ToolCall, its number), once it has ended

    @property
    def baseline(self) -> Snapshot:
        return self.checkpoints[0].snap


class Effects(EgressOracle, ReadOracle):
    """Snapshots around each agent run, the changes between them, and assertions over those changes (and, from the
    world network, what left over it: egress.py; what each tool call read: reads.py)."""

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        *roots: str | os.PathLike[str],
        home: str | os.PathLike[str] | None = None,
        places: dict[str, str | os.PathLike[str]] | None = None,
        bookkeeping: Callable[[str], bool] | None = None,
        own_lines: dict[str, tuple[str, ...]] | None = None,
        secrets: list[str] | None = None,
    ) -> None:
        """`workspace` and `roots` are snapshotted; `places` names other roots for reports ({"~": home, ...});
        `bookkeeping(path)` says which changes are the agent's own state rather than effects of its tools, and so is
        a change to a file of `own_lines` that only appends those lines (and a folder made for nothing else);
        `secrets` are never shown in a report (a list shared with the test's canaries)."""
        self.workspace = absolute(workspace)
        self.home = absolute(home) if home is not None else self.workspace
        self._places = {label: absolute(path) for label, path in (places or {}).items()}
        self._roots: list[str] = list(
            dict.fromkeys([self.workspace, *(absolute(r) for r in roots), *self._places.values()])
        )
        self._is_bookkeeping = bookkeeping or (lambda path: False)
        self._own_lines = own_lines or {}
        self.contents = Contents()
        self.changes: list[Change] = []
        self._runs: list[_Run] = []
        self._open: _Run | None = None
        self.reads = []
        self._secrets: list[str] = secrets if secrets is not None else []
        self._secret_files: list[str] = []
        self._lock = threading.Lock()

    @classmethod
    def of_world(cls, world: Any, secrets: list[str] | None = None) -> Effects:
        """The effects of an agent in a World: its workspace, HOME, TMPDIR and config dir."""
        bookkeeping, own_lines = world_bookkeeping(world)
        return cls(
            world.workspace,
            home=world.home,
            bookkeeping=bookkeeping,
            own_lines=own_lines,
            secrets=secrets,
            places={"~": world.home, "$TMPDIR": world.tmp, "$CLAUDE_CONFIG_DIR": world.config_dir},
        )

    # --- what is watched -----------------------------------------------------------------------

    def watch(self, *paths: str | os.PathLike[str]) -> None:
        """Also snapshot these paths (sentinel files or directories outside the workspace) from the next run on.

        Relative paths are taken from the workspace; `~` is the agent's HOME."""
        for path in paths:
            root = normalise(os.fspath(path), workspace=self.workspace, home=self.home)
            if root not in self._roots:
                self._roots.append(root)

    def redact(self, *values: str) -> None:
        """Never show these strings in a report (canary_secret registers its values here)."""
        self._secrets.extend(v for v in values if v and v not in self._secrets)

    def redact_file(self, *paths: str | os.PathLike[str]) -> None:
        """Never show the values this file holds at the start of a run (`KEY=value` values, else its lines), as for
        `.env`-style files and anything under `secrets/`, which are masked by default."""
        for path in paths:
            target = normalise(os.fspath(path), workspace=self.workspace, home=self.home)
            if target not in self._secret_files:
                self._secret_files.append(target)

    @property
    def secrets(self) -> list[str]:
        """The values reports never show (shared with the test's canaries)."""
        return self._secrets

    # --- the timeline (driven by AgentSession, or by `observe()`) -------------------------------

    def begin(self) -> None:
        """Take the baseline of a run: what is there now is not the agent's doing."""
        with self._lock:
            run = _Run(len(self._runs) + 1, tuple(self._roots))
            run.checkpoints.append(self._point(run, "start"))
            self._runs.append(run)
            self._open = run
            self._learn_secrets(run.baseline)

    def _learn_secrets(self, baseline: Snapshot) -> None:
        """The values of the secret files as the run starts: no report shows them (canary/masking.py)."""
        from ..canary.masking import file_secrets, is_secret_file

        for path, entry in baseline.entries.items():
            if entry.kind != "file":
                continue
            declared = path in self._secret_files
            if declared or (under(path, self.workspace) and is_secret_file(os.path.relpath(path, self.workspace))):
                content = self.contents.read(entry.digest)
                if content is None:  # too big to keep: read where it lies
                    with contextlib.suppress(OSError), open(path, "rb") as file:
                        content = file.read(1 << 20)
                self.redact(*file_secrets(content or b""))

    def checkpoint(self, kind: str, ref: Any = None, call: tuple[str, dict[str, Any]] | None = None) -> None:
        """Snapshot now (a model request arrived; a tool call is about to run, or has run).  No-op between runs."""
        with self._lock:
            if self._open is not None:
                self._open.checkpoints.append(self._point(self._open, kind, ref, call))

    def hook_started(self, ref: Any, window: HookWindow) -> None:
        """A hook process starts (`ref`: its run's id): snapshot now; what changes until `hook_ended(ref)` is its own
        doing, not the tool call's.  No-op between runs."""
        with self._lock:
            if self._open is not None:
                self._open.checkpoints.append(self._point(self._open, "hook-start", ref, hook=window))

    def hook_ended(self, ref: Any, *, credited: bool = True) -> None:
        """The hook process `ref` has ended: snapshot now.  `credited=False`: another process of the agent was alive
        meanwhile, so what changed is not put down to the hook."""
        with self._lock:
            if self._open is not None:
                for point in self._open.checkpoints:
                    if point.kind == "hook-start" and point.ref == ref and point.hook is not None:
                        point.hook.credited = point.hook.credited and credited
                self._open.checkpoints.append(self._point(self._open, "hook-end", ref))

    def end(self, tool_calls: Sequence[Any] = (), exchanges: Sequence[Any] = (), first_number: int = 1) -> list[Change]:
        """Close the run; attribute each change to the tool call (or the hook) during which it happened; return the
        run's changes."""
        with self._lock:
            run, self._open = self._open, None
            if run is None:
                return []
            run.checkpoints.append(self._point(run, "end"))
        calls = run.calls = {getattr(c, "id", None): (c, first_number + i) for i, c in enumerate(tool_calls)}
        asked = tool_uses_by_request(exchanges)
        points = run.checkpoints
        self._note_reads(run.number, points, calls, asked)
        found: list[Change] = []
        for i, windows, before, after in intervals(points):
            changes = compare(points[i].snap, points[i + 1].snap)
            if not changes:
                continue
            if windows:
                attributed, during = by_hooks(windows, calls)
            else:
                attributed, during = attribute(points[before], points[after], calls, asked)
            for change in changes:
                change.run, change.calls, change.during = run.number, attributed, during
                change.by_hook = " and ".join(dict.fromkeys(w.label for w in windows))
                change.users_hook = bool(windows) and all(w.users for w in windows)
                change.bookkeeping = self._is_bookkeeping(change.path) or self._only_own_lines(change)
                change.shown_as = self.show(change.path)
            found.extend(changes)
        _own_folders(found)
        self.changes.extend(found)
        return found

    def _only_own_lines(self, change: Change) -> bool:
        """Whether `change` only appended its runtime's own lines to a file of `own_lines` (read from the snapshots'
        kept bytes, not from the disk as it is now)."""
        lines = self._own_lines.get(change.path)
        if lines is None or change.kind not in ("created", "modified") or change.after is None:
            return False
        before = self.contents.read(change.before.digest) if change.before is not None else b""
        after = self.contents.read(change.after.digest)
        if before is None or after is None or not after.startswith(before):
            return False
        added = after[len(before) :].decode(errors="replace").splitlines()
        return all(not line.strip() or line.strip() in lines for line in added)

    @contextlib.contextmanager
    def observe(self) -> Iterator[Effects]:
        """`with effects.observe(): ...` — one run around a block of code (the core, without an agent session)."""
        self.begin()
        try:
            yield self
        finally:
            self.end()

    def _point(
        self, run: _Run, kind: str, ref: Any = None, call: Any = None, hook: HookWindow | None = None
    ) -> Checkpoint:
        """A checkpoint now: a snapshot, and what was read since the checkpoint before it."""
        read, snap = self._watching(lambda: snapshot(*run.roots, contents=self.contents))
        return Checkpoint(kind, ref, snap, call, hook, read=read)

    # --- what happened -------------------------------------------------------------------------

    @property
    def diff(self) -> list[Change]:
        """Every change the agent made, in order (its own bookkeeping — transcripts, sockets — and what the user's own
        hooks wrote while they ran, `by_hooks`, left out)."""
        return [c for c in self.changes if not c.bookkeeping and not c.users_hook]

    @property
    def by_hooks(self) -> list[Change]:
        """What the user's own hooks changed while they ran (a hook's log file): the hook's doing, not the agent's."""
        return [c for c in self.changes if not c.bookkeeping and c.users_hook]

    @property
    def bookkeeping(self) -> list[Change]:
        """Changes to the agent's own state: its config dir's transcripts and caches, the CLI's sockets."""
        return [c for c in self.changes if c.bookkeeping]

    @property
    def written(self) -> list[str]:
        """The paths the agent created, modified, replaced, deleted or re-moded, as `show` spells them, sorted."""
        return sorted({c.shown_as for c in self.diff})

    def show(self, path: str) -> str:
        """A path as reports spell it: relative to the workspace, or under ~, $TMPDIR, ...; else absolute."""
        if path == self.workspace:
            return "the workspace"
        if under(path, self.workspace):
            return os.path.relpath(path, self.workspace)
        for label, root in sorted(self._places.items(), key=lambda item: -len(item[1])):
            if under(path, root):
                rest = os.path.relpath(path, root)
                return label if rest == "." else f"{label}/{rest}"
        return path

    # --- assertions ----------------------------------------------------------------------------

    def violations(self, path: str | os.PathLike[str]) -> list[tuple[Change, str]]:
        """Each change that wrote `path` under any name reaching it, with the route in words."""
        target = self._covered(path)
        found: list[tuple[Change, str]] = []
        for run in self._runs:
            reach = aliases(target, run.baseline, self.show)
            for change in (c for c in self.changes if c.run == run.number):
                route = route_to(self, change, reach, run.baseline)
                if route is not None:
                    found.append((change, route))
        return found

    def assert_not_written(self, path: str | os.PathLike[str]) -> None:
        """Fail if `path` — under any name that reaches it — was created, modified, replaced or deleted."""
        __tracebackhide__ = True
        if self.violations(path):
            raise EffectViolation(self.explain(path))

    def assert_only_written(self, paths: Iterable[str | os.PathLike[str]], *, include_hooks: bool = False) -> None:
        """Fail if the agent changed anything but `paths` (files, or directories and what is under them).  What the
        user's own hooks wrote while they ran is theirs, not the agent's: `include_hooks=True` judges it too."""
        __tracebackhide__ = True
        allowed = [normalise(os.fspath(p), workspace=self.workspace, home=self.home) for p in paths]
        self._require_runs()
        unexpected = [
            c
            for c in self._judged(include_hooks)
            if not any(under(c.path, a) for a in allowed)
            and not (
                c.kind == "created"
                and c.after is not None
                and c.after.kind == "dir"
                and any(under(a, c.path) for a in allowed)
            )
        ]
        if unexpected:
            raise EffectViolation(
                self._redact(
                    f"The agent changed {len(unexpected)} path(s) besides {', '.join(self.show(a) for a in allowed)}:\n"
                    + "\n".join(self.describe(c) for c in unexpected)
                    + self._hooks_left_out(include_hooks)
                )
            )

    def assert_unchanged_outside(self, *inside: str | os.PathLike[str], include_hooks: bool = False) -> None:
        """Fail if the agent changed anything outside `inside` (default: the workspace) — HOME, TMPDIR, sentinels.
        What the user's own hooks wrote while they ran is left out unless `include_hooks=True`."""
        __tracebackhide__ = True
        keep = [normalise(os.fspath(p), workspace=self.workspace, home=self.home) for p in inside] or [self.workspace]
        self._require_runs()
        outside = [c for c in self._judged(include_hooks) if not any(under(c.path, k) for k in keep)]
        if outside:
            raise EffectViolation(
                self._redact(
                    f"The agent changed {len(outside)} path(s) outside {', '.join(self.show(k) for k in keep)}:\n"
                    + "\n".join(self.describe(c) for c in outside)
                    + self._hooks_left_out(include_hooks)
                )
            )

    def _judged(self, include_hooks: bool) -> list[Change]:
        return [c for c in self.changes if not c.bookkeeping and (include_hooks or not c.users_hook)]

    def _hooks_left_out(self, include_hooks: bool) -> str:
        if include_hooks or not self.by_hooks:
            return ""
        paths = ", ".join(dict.fromkeys(c.shown_as for c in self.by_hooks))
        return f"\n(left out: what your own hooks wrote while they ran — {paths}; include_hooks=True judges it too)"

    def __contains__(self, path: object) -> bool:
        """`".env" in effects`: whether it was written under any name (pytest explains `assert x not in effects`)."""
        return bool(self.violations(path))  # type: ignore[arg-type]

    def explain(self, path: str | os.PathLike[str]) -> str:
        """The report for `path`: each change, the route that reached it, the tool call and the content diff."""
        from .explain import explain

        return explain(self, path)

    def __repr__(self) -> str:
        return f"<Effects: {len(self._runs)} run(s), written {self.written}>"

    # --- helpers -------------------------------------------------------------------------------

    def _require_runs(self) -> None:
        if not self._runs:
            raise ConfigError(
                "No agent run has been observed yet, so there are no effects to judge.",
                hint="Call agent_session.run(...) (or attempt(...)) before asserting on its effects.",
            )

    def _covered(self, path: str | os.PathLike[str]) -> str:
        self._require_runs()
        target = normalise(os.fspath(path), workspace=self.workspace, home=self.home)
        missing = [run.number for run in self._runs if not run.baseline.covers(target)]
        if missing:
            roots = ", ".join(self.show(r) for r in self._runs[missing[0] - 1].roots)
            raise ConfigError(
                f"{target} lies outside every snapshotted root of run {missing[0]} ({roots}), so nothing can be said "
                "about whether it was written.",
                hint=f"Add it as a sentinel before the first run: agent_session.effects.watch({os.fspath(path)!r}) "
                "(a file or a directory above it).",
            )
        return target

    def describe(self, change: Change) -> str:
        """One change in a line: run, the tool call it happened during, path, kind and detail."""
        during = f" during {change.during}" if change.during and change.during != "the run" else ""
        return f"  run {change.run}{during}: {change.shown_as} {change.kind} ({change.detail})"

    def _redact(self, text: str) -> str:
        from ..canary.masking import redact

        return redact(text, self._secrets)
