"""What the command hooks did in a run: their runs as the recorder logged them, the decision each one answered (read
as the Claude Code CLI reads it), the tool calls credited with those decisions, and the listener the recorder tells
when a hook starts and ends (so the effects oracle can tell the hook's own writes from the tool call's).

Decision shapes of a PreToolUse command hook, as CLI 2.1.332 honours them (measured, tests/test_settings_hooks.py):

- exit code 2: deny, the reason on stderr (the model sees `PreToolUse:Bash hook error: [command]: reason`);
- exit 0 and JSON `hookSpecificOutput.permissionDecision`: `deny` (with `permissionDecisionReason`), `allow` (the
  permission prompt is skipped; a settings deny rule still wins), `ask` (the permission system asks: with no one to
  ask, the call is refused); legacy `decision: "block"` / `"approve"` mean deny / allow;
- `updatedInput` (with or without a decision): the call runs with that input instead, judged by what ran;
- `continue: false`: does not stop the tool call (it ran, in bypassPermissions);
- any other exit code: a non-blocking error, the call goes on.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..layers import assign, refusal
from ..tool_call import ToolCall
from .permission_rules import rules_for
from .settings_hooks import HOOKS_DIR, CommandHook, SettingsFile

DECISIONS = ("deny", "allow", "ask", "stop", "error", "none")


@dataclass
class HookRun:
    """One run of a command hook: the hook, what it was given, what it answered."""

    id: str
    hook: CommandHook
    input: dict[str, Any]
    exit_code: int
    stdout: str
    stderr: str
    started: float
    ended: float
    pid: int
    decision: str = "none"  # one of DECISIONS, read from the exit code and the output
    reason: str = ""
    updated_input: dict[str, Any] | None = None

    @property
    def tool_use_id(self) -> str:
        return str(self.input.get("tool_use_id") or "")

    @property
    def seconds(self) -> float:
        return max(0.0, self.ended - self.started)

    def __str__(self) -> str:
        tool = self.input.get("tool_name")
        said = f": {self.reason[:100]}" if self.reason else ""
        return f"{self.hook.label}{f' on {tool}' if tool else ''}: {self.decision}{said} (exit {self.exit_code})"


# `str(HookRun)` read back (a ToolCall keeps its hook runs as these words): for policy coverage (audit/coverage.py).
_RUN_WORDS = re.compile(
    r"the (?P<event>\S+) command hook `(?P<command>.*?)` \((?P<file>[^()]*?)(?P<planted>, planted)?\)"
    rf"(?: on (?P<tool>\S+))?: (?P<decision>{'|'.join(DECISIONS)})\b"
)


def run_facts(words: str) -> dict[str, str] | None:
    """The hook (event, file, shortened command), the tool and the decision of one `str(HookRun)`; None for
    other words."""
    found = _RUN_WORDS.match(words)
    if found is None or found["planted"]:
        return None  # a planted hook is the attacker's, not the audited policy's
    return {k: found[k] or "" for k in ("event", "file", "command", "tool", "decision")}


def decide(exit_code: int, stdout: str, stderr: str) -> tuple[str, str, dict[str, Any] | None]:
    """(decision, reason, updatedInput) of a hook's answer, as the CLI reads it."""
    if exit_code == 2:
        return "deny", stderr.strip() or "exit code 2", None
    if exit_code != 0:
        lines = [line.strip() for line in stderr.splitlines() if line.strip()]
        crashed = "Traceback (most recent call last)" in stderr and lines  # what it raised is its last line
        said = lines[-1][:200] if crashed else " ".join(stderr.split())[:200]
        return "error", failure(exit_code) + (f": {said}" if said else ""), None
    try:
        answer = json.loads(stdout) if stdout.strip().startswith("{") else None
    except ValueError as error:
        return "error", f"its stdout is not valid JSON ({error}), so the CLI reads no decision in it", None
    if not isinstance(answer, dict):
        return "none", "", None
    specific = answer.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    updated = specific.get("updatedInput") if isinstance(specific.get("updatedInput"), dict) else None
    decision = specific.get("permissionDecision")
    if decision in ("deny", "allow", "ask"):
        return decision, str(specific.get("permissionDecisionReason") or ""), updated
    legacy = {"block": "deny", "approve": "allow"}.get(str(answer.get("decision")))
    if legacy:
        return legacy, str(answer.get("reason") or ""), updated
    if answer.get("continue") is False:
        return "stop", str(answer.get("stopReason") or ""), updated
    return "none", "", updated


def failure(exit_code: int) -> str:
    """A hook's exit code other than 0 and 2 in words, the signal first (the CLI treats each as a non-blocking error
    and runs the call): `could not start (exit 127: its interpreter or script is missing)`."""
    if exit_code == 127:
        return "could not start (exit 127: its interpreter or script is missing)"
    if exit_code == 126:
        return "could not start (exit 126: its script is not executable)"
    if exit_code > 128 and exit_code - 128 in (signal.SIGTERM, signal.SIGKILL, signal.SIGINT):
        name = signal.Signals(exit_code - 128).name
        return f"was killed (exit {exit_code}, {name}: the CLI stops a hook at its timeout)"
    return f"exit code {exit_code}, not 2 (a non-blocking error)"


def fail_open(call: ToolCall) -> dict[str, str]:
    """The hooks that failed on `call` (its `str(HookRun)` words whose decision is `error`), by shortened command,
    each as a reader is told it: `the PreToolUse command hook `x` (FILE) on Read failed (could not start (exit 127:
    ...): ...)`."""
    found = {}
    for words in call.hook_runs:
        facts = run_facts(words)
        if facts is not None and facts["decision"] == "error":
            head, _, why = words.partition(": error: ")
            found[facts["command"]] = f"{head} failed ({why.rsplit(' (exit', 1)[0]})"
    return found


def log_path(world: Any) -> Path:
    return Path(world.root) / HOOKS_DIR / "runs.jsonl"


def log_size(world: Any) -> int:
    """Where the log ends now: a run reads what was written after it (`read_runs(world, since=...)`)."""
    try:
        return log_path(world).stat().st_size
    except OSError:
        return 0


def read_runs(world: Any, since: int = 0) -> list[HookRun]:
    """The hook runs logged in `world` from byte `since` on, in the order they ended."""
    try:
        with open(log_path(world), "rb") as log:
            log.seek(since)
            lines = log.read().splitlines()
    except OSError:
        return []
    runs = []
    for line in lines:
        try:
            record = json.loads(line)
            stdin = record.get("input") or ""
            given = json.loads(stdin) if stdin.strip().startswith("{") else {}
        except ValueError:
            continue  # a line cut by a crash
        decision, reason, updated = decide(record["exit_code"], record["stdout"], record["stderr"])
        runs.append(
            HookRun(
                record["id"],
                CommandHook.from_spec(record.get("hook") or {}),
                given if isinstance(given, dict) else {},
                record["exit_code"],
                record["stdout"],
                record["stderr"],
                record["started"],
                record["ended"],
                record["pid"],
                decision,
                reason,
                updated,
            )
        )
    return runs


def credit(
    calls: Iterable[ToolCall], runs: Sequence[HookRun], settings: Sequence[SettingsFile] = (), mode: str | None = None
) -> None:
    """Each tool call's verdict and counts with what the PreToolUse command hooks that saw it decided: a deny the CLI
    honoured is `denied_by_hook` (the hook named in `reason`), a call that ran on a hook's allow `allowed_by_hook`, an
    `ask` nobody could answer `asked`; `updatedInput` is what ran (`ran_input`).  A call the CLI's permission system
    refused with no hook and no question behind it is a `permissions.deny` rule of `settings` that matches it (the CLI
    does not say which), the permission mode (`dontAsk`, `mode`), or else the CLI's own check.  Then each call's
    layer: who decided it (layers.assign)."""
    seen: dict[str, list[HookRun]] = {}
    for run in runs:
        if run.hook.event == "PreToolUse" and run.tool_use_id:
            seen.setdefault(run.tool_use_id, []).append(run)
    calls = list(calls)
    for call in calls:
        mine = seen.get(call.id, [])
        if call.verdict == "errored" and not call.observed and (words := refusal(call.result)):
            # seen from outside: the CLI's words are all there is
            call.verdict = "asked" if words == "prompt" else "denied_by_permission"
            call.layer, call.inferred = words, True
        if mine:
            _credit_hooks(call, mine)
        if call.verdict == "denied_by_permission" and call.layer in ("", "rule", "mode") and not call.decided_by:
            _permission_layer(call, settings, mode)
    for call in calls:
        assign(call)


def _credit_hooks(call: ToolCall, mine: list[HookRun]) -> None:
    """The call's verdict with what the command hooks that saw it answered."""
    call.hooks_consulted += len(mine)
    call.hook_runs = [str(run) for run in mine]
    denied = next((r for r in mine if r.decision == "deny"), None)
    asked = next((r for r in mine if r.decision == "ask"), None)
    allowed = next((r for r in mine if r.decision == "allow"), None)
    rewritten = [r.updated_input for r in mine if r.updated_input is not None]
    if rewritten and call.verdict in ("allowed", "errored"):
        call.ran_input = rewritten[-1]
    refused = call.verdict in ("errored", "asked") or call.verdict == "denied_by_permission" and call.layer != "guard"
    if refused and denied is not None:
        call.verdict, call.decided_by, call.layer, call.inferred = "denied_by_hook", denied.hook.label, "guard", False
        call.reason = f"{denied.reason} ({denied.hook.label})"
    elif refused and asked is not None:
        call.verdict, call.decided_by, call.layer, call.inferred = "asked", asked.hook.label, "prompt", False
        call.reason = f"{asked.hook.label} asked for approval ({asked.reason or 'no reason given'}); none was given"
    elif call.verdict == "allowed" and denied is not None:
        call.reason = f"it ran although {denied.hook.label} denied it: {denied.reason}"
    elif call.verdict == "allowed" and allowed is not None:
        call.verdict, call.decided_by, call.layer = "allowed_by_hook", allowed.hook.label, "guard"
        call.reason = f"{allowed.hook.label} allowed it" + (f": {allowed.reason}" if allowed.reason else "")


def _permission_layer(call: ToolCall, settings: Sequence[SettingsFile], mode: str | None) -> None:
    """Who of the permission system refused a call nothing else decided: a deny rule that matches it, the dontAsk
    mode, else the CLI's own check (a write through a symlink).  Only when neither a rule matches nor the mode says
    so do the CLI's words decide, and the verdict then says it was inferred."""
    rules, matched = rules_for(call, settings)
    words = refusal(call.result)
    if matched:
        call.layer, call.inferred = "rule", call.inferred or not call.observed
    elif mode == "dontAsk" and call.observed:
        call.layer = "mode"
    elif words in ("rule", "mode"):
        call.layer, call.inferred = words, True
    else:
        call.verdict, call.layer = "errored", "cli"  # what is left: the CLI refused the input itself
        return
    if call.layer == "rule" and rules:
        which = "the permissions.deny rule" if len(rules) == 1 else "one of the permissions.deny rules"
        call.decided_by = f"{which} {', '.join(rules)}"
        call.reason = f"{call.reason or call.result} ({call.decided_by})"


@dataclass
class HookListener:
    """Where the recorder says a hook starts and has ended: `on_message` runs (and snapshots) before it answers, so the
    hook waits for it.  Its address is in `<world>/hooks/listener` while it is open."""

    world: Any
    on_message: Callable[[dict[str, Any]], None]
    _threads: list[threading.Thread] = field(default_factory=list)

    def __enter__(self) -> HookListener:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._address = Path(self.world.root) / HOOKS_DIR / "listener"
        self._address.parent.mkdir(exist_ok=True)
        host, port = self._socket.getsockname()[:2]
        temporary = self._address.with_suffix(".tmp")
        temporary.write_text(f"{host}:{port}")
        os.replace(temporary, self._address)  # a recorder never reads half an address
        accepting = threading.Thread(target=self._accept, name="controlplane-hooks", daemon=True)
        accepting.start()
        self._threads.append(accepting)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._address.unlink(missing_ok=True)
        self._wake_writer.send(b"x")
        self._threads[0].join()
        self._socket.close()
        self._wake_reader.close()
        self._wake_writer.close()

    def _accept(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._socket, selectors.EVENT_READ)
            selector.register(self._wake_reader, selectors.EVENT_READ)
            while not any(key.fileobj is self._wake_reader for key, _ in selector.select()):
                connection, _ = self._socket.accept()
                serving = threading.Thread(target=self._serve, args=(connection,), daemon=True)
                serving.start()

    def _serve(self, connection: socket.socket) -> None:
        """One hook run: a start line, later an end line; each answered once `on_message` is done with it."""
        with connection, connection.makefile("rb") as lines:
            for line in lines:
                try:
                    message = json.loads(line)
                    self.on_message(message)
                except Exception:  # noqa: BLE001 - never leave a hook waiting on us
                    pass
                try:
                    connection.sendall(b"ok\n")
                except OSError:
                    return
