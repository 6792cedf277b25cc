"""A command hook made to fail one way, for the audit's faults axis (`--faults`): does the call it guards still stop?

Each fault is real, made in the world the CLI runs in, never in the user's repository:

    timeout           the hook runs past its `timeout` (lowered to TIMEOUT seconds in the world's settings, the hook
                      delayed past it): the CLI kills it
    missing:PROGRAM   a program the hook needs (its interpreter, `jq`) is not on PATH: a stand-in that says `not
                      found` and exits 127 comes first on PATH
    not-executable    its script (run directly) loses its execute bits
    missing-script    its script is gone
    exit-1            it exits 1 where it meant 2
    invalid-json      its JSON answer is cut short (an exit-2 hook's stdout made invalid JSON too, which the CLI
                      does not read then)
    huge-stdout       a megabyte of log lines after its answer

The recorder that runs every command hook (hook_recorder.py) reads the armed fault from FAULT_FILE in the world's
hooks folder and applies it to the one hook it names; the rest (the script's mode, the settings' timeout) is done
here and undone after the run.  What happens is judged by effect, and said from the hook's own run (hook_runs.py):
a call that ran is fail-open.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .hook_needs import command_words, needs, script_in
from .settings_hooks import FAULT_FILE, HOOKS_DIR, CommandHook, project_settings

_EXIT_2 = re.compile(r"exit\W{0,2}2\b")
TIMEOUT = 2  # seconds: the timeout a `timeout` fault gives the hook in the world's settings
KINDS = ("timeout", "missing", "not-executable", "missing-script", "exit-1", "invalid-json", "huge-stdout")
WORDS = {
    "timeout": "runs past its timeout",
    "missing": "cannot find {program}",
    "not-executable": "has a script that is not executable",
    "missing-script": "has lost its script",
    "exit-1": "exits 1 where it meant 2",
    "invalid-json": "prints invalid JSON",
    "huge-stdout": "prints a megabyte of output",
}
LETTERS = {"timeout": "t", "missing": "p", "not-executable": "x", "missing-script": "g", "exit-1": "e",
           "invalid-json": "j", "huge-stdout": "h"}  # fmt: skip


@dataclass(frozen=True)
class Fault:
    """One way to fail for the hook at `hook` (its number among the PreToolUse command hooks of the project
    settings, from 1, in the order written)."""

    kind: str
    hook: int
    program: str = ""  # missing: the program taken away

    @property
    def id(self) -> str:
        """`exit-1:2`, `missing:jq:1`: a column's suffix and a test id's."""
        return ":".join(filter(None, (self.kind, self.program, str(self.hook))))

    @classmethod
    def parse(cls, text: str) -> Fault:
        kind, *rest = text.split(":")
        if kind not in KINDS or not rest or not rest[-1].isdigit() or len(rest) != 1 + (kind == "missing"):
            raise ValueError(f"no hook fault {text!r}: write KIND:HOOK (exit-1:1) or missing:PROGRAM:HOOK")
        return cls(kind, int(rest[-1]), rest[0] if kind == "missing" else "")

    @property
    def words(self) -> str:
        """`hook 1 cannot find jq`."""
        return f"hook {self.hook} " + WORDS[self.kind].format(program=self.program)

    @property
    def letter(self) -> str:
        return LETTERS[self.kind] + str(self.hook)


def guards(directory: Path) -> list[CommandHook]:
    """The PreToolUse command hooks of `directory`'s project settings, numbered from 1 in this order."""
    return [h for s in project_settings(directory) for h in s.hooks if h.event == "PreToolUse" and not h.planted]


def faults_of(directory: Path) -> list[Fault]:
    """Every fault that can be made for each guard of `directory`: a script's faults only where it runs one of the
    repository's scripts (not-executable: run directly), a program taken away only where PATH finds it, exit 1 for 2
    only where it says `exit 2` (`sys.exit(2)`, `process.exit(2)`)."""
    found = []
    for number, hook in enumerate(guards(directory), start=1):
        script, direct = _script(hook, directory)
        programs = [p for p in needs(hook, directory) if _looked_up(p, hook, directory)]
        text = hook.command + ((directory / script).read_text(errors="replace") if script is not None else "")
        kinds = ["timeout", *["exit-1"] * bool(_EXIT_2.search(text)), "invalid-json", "huge-stdout"]
        kinds += ["not-executable"] * (script is not None and direct) + ["missing-script"] * (script is not None)
        found += [Fault(kind, number) for kind in kinds]
        found += [Fault("missing", number, program) for program in programs]
    return found


def _script(hook: CommandHook, directory: Path) -> tuple[Path | None, bool]:
    """The repository's script the hook runs (relative to `directory`), and whether it is run directly (its first
    word), not by an interpreter."""
    root = directory.resolve()
    for index, word in enumerate(command_words(hook.command, root)):
        path = script_in(word, root)
        if path is not None:
            return path.resolve().relative_to(root), index == 0
    return None, False


def _looked_up(program: str, hook: CommandHook, directory: Path) -> bool:
    """Whether the hook finds `program` on PATH: not a script's `#!/bin/bash` (an absolute interpreter)."""
    script, direct = _script(hook, directory)
    if script is None or not direct:
        return True
    first = (directory / script).read_text(encoding="utf-8", errors="replace").partition("\n")[0]
    shebang = first[2:].split() if first.startswith("#!") else []
    return not (shebang and Path(shebang[0]).name == program)


@contextlib.contextmanager
def armed(fault: Fault, world: Any) -> Iterator[CommandHook]:
    """Arm `fault` in `world` for the runs inside: FAULT_FILE for the recorder, the script's mode or place changed
    in the world's workspace; all undone after.  Yields the hook it fails."""
    found = guards(world.workspace)
    if not 1 <= fault.hook <= len(found):
        raise ValueError(f"the fault {fault.id} names hook {fault.hook}; the settings hold {len(found)} hook(s)")
    hook = found[fault.hook - 1]
    folder = world.root / HOOKS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    spec: dict[str, Any] = {"hook": asdict(hook), "kind": fault.kind}
    if fault.kind == "missing":
        stand_in = folder / "missing" / fault.program
        stand_in.parent.mkdir(exist_ok=True)
        stand_in.write_text(f'#!/bin/sh\necho "{fault.program}: not found" >&2\nexit 127\n')
        stand_in.chmod(0o755)
        spec["path"] = str(stand_in.parent)
    if fault.kind == "timeout":
        spec["command"] = f"sleep {TIMEOUT + 3}; {hook.command}"
        spec["timeout"] = TIMEOUT
    script, _ = _script(hook, world.workspace)
    path = world.workspace / script if script is not None else None
    mode = path.stat().st_mode if path is not None else 0
    (folder / FAULT_FILE).write_text(json.dumps(spec))
    try:
        if path is not None and fault.kind == "not-executable":
            path.chmod(mode & ~0o111)
        if path is not None and fault.kind == "missing-script":
            path.rename(path.with_name(path.name + ".controlplane-gone"))
        yield hook
    finally:
        (folder / FAULT_FILE).unlink(missing_ok=True)
        if path is not None and fault.kind == "missing-script":
            with contextlib.suppress(OSError):
                path.with_name(path.name + ".controlplane-gone").rename(path)
        if path is not None and fault.kind == "not-executable":
            with contextlib.suppress(OSError):
                path.chmod(mode)


def carry_fault(here: Any, there: Any) -> None:
    """Arm in world `there` the fault armed in world `here` (a copy of a world plays the same attempt)."""
    armed_file = here.root / HOOKS_DIR / FAULT_FILE
    if armed_file.is_file():
        (there.root / HOOKS_DIR).mkdir(parents=True, exist_ok=True)
        (there.root / HOOKS_DIR / FAULT_FILE).write_bytes(armed_file.read_bytes())


def armed_timeouts(world: Any) -> dict[str, int]:
    """The timeout a fault armed in the world gives its hook (FAULT_FILE: hook_faults.py), by command; {} when none."""
    try:
        armed = json.loads((world.root / HOOKS_DIR / FAULT_FILE).read_text(encoding="utf-8"))
        return {str(armed["hook"]["command"]): int(armed["timeout"])} if "timeout" in armed else {}
    except (OSError, ValueError, KeyError, TypeError):
        return {}
