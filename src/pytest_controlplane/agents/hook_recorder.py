"""The transparent recorder the world's settings run in place of each command hook (see settings_hooks.py).

    <python> -I -S hook_recorder.py '{"command": "...", "event": "PreToolUse", "matcher": "Bash", ...}'

It runs the hook's own command exactly as the Claude Code CLI would (`/bin/sh -c COMMAND`, the same stdin, environment
and working directory), hands its stdout, stderr and exit code back unchanged, and records the run: one JSON line in
`$CONTROLPLANE_WORLD/hooks/runs.jsonl` (the hook, its input, exit code, output, start, end, pid).  Around the command
it tells the test (at the address in `$CONTROLPLANE_WORLD/hooks/listener`, if one listens) that the hook starts and
has ended, and waits for its answer each time, so the effects oracle snapshots the files just before and just after:
what changed in between is the hook's doing.

A hook fault armed in the world for this hook (`$CONTROLPLANE_WORLD/hooks/fault.json`, hook_faults.py) is applied:
another command, a program taken off PATH, the exit code or the output bent.

Standard library only, no site-packages (`-I -S`): it starts in ~20 ms and sees nothing of the test's environment
but what the CLI gives every hook.  Without `$CONTROLPLANE_WORLD`, or with nobody listening, it only runs the command.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

WORLD_ENV = "CONTROLPLANE_WORLD"
SHELL = "/bin/sh"  # what the CLI runs a command hook with (measured on 2.1.332: `/bin/sh -c COMMAND`)
ANSWER_WAIT = 30.0  # seconds to wait for the test's snapshot before running on without it


def _listener(world: str) -> socket.socket | None:
    """A connection to the test's listener, or None (no test is listening: a run by hand, or after the test)."""
    try:
        with open(os.path.join(world, "hooks", "listener"), encoding="utf-8") as file:
            host, _, port = file.read().strip().rpartition(":")
        return socket.create_connection((host, int(port)), timeout=ANSWER_WAIT)
    except (OSError, ValueError):
        return None


def _tell(channel: socket.socket | None, message: dict[str, Any]) -> socket.socket | None:
    """Send one line and wait for the answer line; the channel, or None once it failed (then carry on alone)."""
    if channel is None:
        return None
    try:
        channel.sendall(json.dumps(message).encode() + b"\n")
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = channel.recv(64)
            if not chunk:
                raise OSError("the listener closed the connection")
            answer += chunk
        return channel
    except OSError:
        channel.close()
        return None


def _tool_use_id(stdin: bytes) -> str:
    try:
        data = json.loads(stdin)
    except ValueError:
        return ""
    return str(data.get("tool_use_id") or "") if isinstance(data, dict) else ""


def _fault(world: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The fault armed in the world for this very hook (hook_faults.py), or {}."""
    try:
        with open(os.path.join(world, "hooks", "fault.json"), encoding="utf-8") as file:
            armed = json.load(file)
        mine = all(armed["hook"].get(key) == spec.get(key) for key in ("event", "file", "matcher", "command"))
    except (OSError, ValueError, KeyError, AttributeError, TypeError):
        return {}
    return armed if mine else {}


def _faulted(fault: dict[str, Any], code: int, stdout: bytes) -> tuple[int, bytes]:
    """The hook's answer as the armed fault bends it: exit 1 for 2, its JSON cut short (an answer that is no JSON made
    invalid JSON too), a megabyte of log lines after it."""
    kind = fault.get("kind")
    if kind == "exit-1" and code == 2:
        return 1, stdout
    if kind == "invalid-json":
        text = stdout.rstrip()
        return code, (text[:-1] if text.startswith(b"{") else b'{"decision": "block", "reason": ' + text) + b"\n"
    if kind == "huge-stdout":
        return code, stdout + b"".join(b"debug: line %d of the hook's own log\n" % n for n in range(30_000))
    return code, stdout


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    stdin = sys.stdin.buffer.read()
    world = os.environ.get(WORLD_ENV, "")
    fault = _fault(world, spec) if world else {}
    run_id = f"{os.getpid()}-{time.time_ns()}"
    about = {"id": run_id, "hook": spec, "tool_use_id": _tool_use_id(stdin)}
    channel = _tell(_listener(world), {"phase": "start", **about}) if world else None
    started = time.time()
    env = dict(os.environ)
    if fault.get("path"):  # a program taken away: its stand-in first on PATH
        env["PATH"] = f"{fault['path']}{os.pathsep}{env.get('PATH', '')}"
    child = subprocess.Popen(
        [SHELL, "-c", fault.get("command") or spec["command"]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )

    def forward(number: int, frame: Any) -> None:  # the CLI stopping the hook (its timeout) stops the command
        child.send_signal(number)

    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, forward)
    stdout, stderr = child.communicate(stdin)
    code = child.returncode if child.returncode >= 0 else 128 - child.returncode  # as sh reports a signal
    code, stdout = _faulted(fault, code, stdout) if fault else (code, stdout)
    if world:
        record = {
            **about,
            "input": stdin.decode(errors="replace"),
            "exit_code": code,
            "stdout": stdout.decode(errors="replace"),
            "stderr": stderr.decode(errors="replace"),
            "started": started,
            "ended": time.time(),
            "pid": child.pid,
            **({"fault": fault["kind"]} if fault else {}),
        }
        try:
            log = os.open(os.path.join(world, "hooks", "runs.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(log, json.dumps(record).encode() + b"\n")  # one write: lines of parallel hooks never mix
            finally:
                os.close(log)
        except OSError:
            pass  # the world is gone: the hook's answer still goes back to the CLI
    channel = _tell(channel, {"phase": "end", **about, "exit_code": code})
    if channel is not None:
        channel.close()
    sys.stdout.buffer.write(stdout)
    sys.stdout.buffer.flush()
    sys.stderr.buffer.write(stderr)
    sys.stderr.buffer.flush()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
