"""The Claude Code sandbox as a run applies it: what the settings ask for, whether it can run here, and for each Bash
call whether it really ran sandboxed.

Claude Code runs Bash commands under bubblewrap on Linux when `sandbox.enabled` is set in any settings source; the
sources merge, the later over the earlier: the user's settings, the project's `.claude/settings.json`, its
`.claude/settings.local.json`, then `--settings` (where `ClaudeAgentOptions(settings=..., sandbox=...)` go; the SDK
puts `sandbox` there).  Measured on CLI 2.1.332 (its words and the release-dependent facts are in cli_facts.py):

- without `bwrap` or `socat` on PATH the CLI runs every command unsandboxed and says nothing, to the model or in its
  debug log (unless `sandbox.failIfUnavailable` makes it refuse to start);
- when the sandbox cannot start it answers one call "Sandbox is enabled but failed to initialize …" and runs the rest
  of the session unsandboxed;
- `dangerouslyDisableSandbox: true` runs the command unsandboxed, unless `allowUnsandboxedCommands: false`: then it
  runs sandboxed all the same;
- an `excludedCommands` entry (`git:*`, `cp *`, `touch`) unsandboxes a command that is that simple command alone:
  chained (`true && touch ../x`, `touch ../x && echo`), redirected, or with parentheses or `$` anywhere (even
  quoted: `python3 -c "open(...)"`), it stays sandboxed;
- a refused write answers in the OS's words: "Read-only file system" (outside the workspace), "Permission denied"
  (the paths the sandbox protects inside it, such as `.claude/settings*.json`);
- reads are open by default (`~/.ssh`, `~/.aws`); a `sandbox.filesystem.denyRead` entry hides the path from sandboxed
  commands, which then answer "No such file or directory" for what is there, and so does a `Read(...)` deny rule of
  the same settings (on 2.1.300 to 2.1.319 the CLI runs `cat ~/.ssh/id` under `Read(~/.ssh/**)` sandboxed, and only
  the sandbox holds the rule; newer releases refuse it by the rule before it runs:
  cli_facts.FILE_RULES_HOLD_SANDBOXED_COMMANDS_SINCE).
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cli_facts import SANDBOX_FAILED_TO_START as FAILED_TO_START
from ..cli_facts import SANDBOX_NETWORK_REFUSED as _NETWORK_REFUSED
from ..cli_facts import SANDBOX_NOT_EXCLUDED as _COMPOUND
from ..cli_facts import SANDBOX_PROXY_FAILED as _PROXY_FAILED
from ..tool_call import ToolCall

# The settings files of a world that may hold `sandbox`, by setting source, the earlier under the later.
_FILES = (
    ("user", "config/settings.json"),
    ("project", ".claude/settings.json"),
    ("local", ".claude/settings.local.json"),
)
# A name that cannot resolve inside the sandbox (no DNS but its proxy's), in the words of the commands that say so.
_NO_NETWORK = re.compile(r"Temporary failure in name resolution|Could not resolve host|Name or service not known")


@dataclass
class Sandbox:
    """The sandbox a run's settings ask for, merged from every source, and what keeps it from running here."""

    settings: dict[str, Any] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)  # where `sandbox` was set, in the merge order
    missing: list[str] = field(default_factory=list)  # "bubblewrap (bwrap)", "socat": not on the agent's PATH
    failed: str = ""  # what the CLI said when the sandbox failed to start in the session (mark finds it)
    home: str = ""  # the agent's HOME, for `~` in denyRead
    # The places the `Read(...)` deny rules of the same settings name, which the sandbox hides as it hides denyRead
    # (cli_facts.FILE_RULES_HOLD_SANDBOXED_COMMANDS_SINCE): (the place, the rule and its file).
    read_denied: list[tuple[str, str]] = field(default_factory=list)

    @property
    def enabled(self) -> bool:
        return bool(self.settings.get("enabled"))

    @property
    def unavailable(self) -> str:
        """Why the sandbox asked for cannot run here, in one line ("" when it can, or was not asked for)."""
        if not self.enabled or not self.missing:
            return ""
        refuses = self.settings.get("failIfUnavailable")
        return (
            f"the sandbox is enabled ({', '.join(self.sources)}) but cannot run here: {' and '.join(self.missing)} "
            f"not on PATH; " + (
                "with sandbox.failIfUnavailable the CLI refuses to start"
                if refuses
                else "the CLI then runs every Bash command unsandboxed, and says nothing (apt-get install bubblewrap "
                "socat; sandbox.failIfUnavailable: true makes it refuse to start instead)"
            )
        )  # fmt: skip


def configured(options: Any, workspace: Path, root: Path, path: str) -> Sandbox:
    """The sandbox of a ClaudeAgentOptions run in the world at `root` (its workspace `workspace`; `path`: the agent's
    PATH): the settings sources the options load (`setting_sources`; all of them when unset), then `settings=` and
    `sandbox=`."""
    sources = options.setting_sources
    found = Sandbox(home=str(root / "home"))
    for source, name in _FILES:
        if sources is not None and source not in sources:
            continue
        place = root / name if source == "user" else workspace / name
        text, label = _text(place), f"{source} {name.split('/', 1)[-1] if source == 'user' else name}"
        _merge(found, _sandbox_of(text), label)
        own_root = place.parent if source == "user" else workspace  # where a rule's `/path` starts
        found.read_denied += _read_rules(text, label if source == "user" else name, found.home, workspace, own_root)
    flag = options.settings
    if isinstance(flag, str) and flag.strip():
        text = flag if flag.lstrip().startswith("{") else _text(workspace / flag)
        _merge(found, _sandbox_of(text), "ClaudeAgentOptions(settings=...)")
        found.read_denied += _read_rules(text, "ClaudeAgentOptions(settings=...)", found.home, workspace, workspace)
    if isinstance(options.sandbox, dict):
        _merge(found, options.sandbox, "ClaudeAgentOptions(sandbox=...)")
    found.missing = [name for name, program in (("bubblewrap (bwrap)", "bwrap"), ("socat", "socat"))
                     if shutil.which(program, path=path) is None]  # fmt: skip
    return found


def strict(settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` with the documented hardening: on, no way to run a command unsandboxed, nothing excluded, and no
    silent fallback when it cannot run."""
    return {
        **settings,
        "enabled": True,
        "allowUnsandboxedCommands": False,
        "excludedCommands": [],
        "failIfUnavailable": True,
    }


def mark(calls: Iterable[ToolCall], sandbox: Sandbox | None) -> None:
    """Each Bash call's `sandboxed` (and `sandbox_note`, why not) under `sandbox`, in the order the calls ran."""
    if sandbox is None or not sandbox.enabled:
        return
    failed = ""
    allow_unsandboxed = sandbox.settings.get("allowUnsandboxedCommands", True) is not False
    for call in calls:
        if call.name != "Bash" or call.verdict not in ("allowed", "errored"):
            continue  # it never ran: refused, asked, or stopped before a shell started
        started = FAILED_TO_START.search(call.result)
        if started and not failed:
            failed = sandbox.failed = started.group(0)
        command = str(call.effective_input.get("command", "")).strip()
        excluded = _excluded(command, sandbox.settings.get("excludedCommands") or [])
        if sandbox.missing:
            call.sandboxed, call.sandbox_note = False, f"unsandboxed: {' and '.join(sandbox.missing)} not on PATH"
        elif failed:
            call.sandboxed, call.sandbox_note = False, f"unsandboxed: the CLI said {failed.rstrip('.')}"
        elif call.effective_input.get("dangerouslyDisableSandbox") is True and allow_unsandboxed:
            call.sandboxed, call.sandbox_note = False, "unsandboxed: dangerouslyDisableSandbox"
        elif excluded:
            call.sandboxed, call.sandbox_note = False, f"unsandboxed: excludedCommands {excluded!r}"
        else:
            call.sandboxed, call.sandbox_note = True, "sandboxed"
            hidden, refused = _hidden(call.result, sandbox), _NETWORK_REFUSED.search(call.result)
            if hidden:
                call.layer, call.sandbox_note = "sandbox", f"sandboxed: {hidden} hides the file"
            elif failed_proxy := proxy_failed(call):
                call.sandbox_note = f"sandboxed: its proxy failed ({failed_proxy})"
            elif refused and refused.group(2) == "user denied":  # its network prompt, with nobody to answer
                call.verdict, call.layer = "asked", "prompt"
                call.decided_by = (
                    f"the sandbox: its proxy asked whether {refused.group(1)} may be reached (not in "
                    "sandbox.network.allowedDomains)"
                )
            elif refused or _NO_NETWORK.search(call.result):
                call.layer = "sandbox"
                call.sandbox_note = (
                    f"sandboxed: its proxy refused {refused.group(1)} ({refused.group(2)})"
                    if refused
                    else "sandboxed: no network in the sandbox but its proxy, and no name resolves"
                )


def proxy_failed(call: ToolCall | None) -> str:
    """What a sandboxed call said of its sandbox's proxy failing, "" when it did not: not a refusal but a sandbox
    that could not work, which proves nothing either way."""
    found = _PROXY_FAILED.search(call.result) if call is not None and call.sandboxed else None
    return found.group(0) if found else ""


def let_out(sandbox: Sandbox | None, call: ToolCall | None, host: str) -> list[str]:
    """The sandbox's words on `call` (a sandboxed call reaching `host` went out through the sandbox's proxy: whether
    through an allowed domain, or one the allowlist does not name)."""
    notes = [call.sandbox_note] if call is not None and call.sandbox_note else []
    if not host or sandbox is None or not sandbox.enabled or call is None or not call.sandboxed:
        return notes
    allowed = [str(domain) for domain in (sandbox.settings.get("network") or {}).get("allowedDomains") or []]
    match = next((d for d in allowed if host == d or d.startswith("*.") and host.endswith(d[1:])), "")
    if match:
        return [*notes, f"through an allowed domain: {match!r} is in sandbox.network.allowedDomains"]
    return [*notes, (
        f"{host} is not in sandbox.network.allowedDomains ({', '.join(allowed) or 'empty'}) and the sandbox's proxy "
        "let it out: its network prompt was approved (under bypassPermissions without asking: anthropics/claude-code "
        "#84833)"
    )]  # fmt: skip


class SandboxNotRunning(UserWarning):
    """The sandbox a run's settings ask for did not run (it cannot here, or it failed to start): its Bash commands
    ran unsandboxed, and nothing they did is credited to it."""


def warn_if_not_running(sandbox: Sandbox | None) -> None:
    """One clear line when the sandbox asked for did not run: why, and what the CLI did instead."""
    if sandbox is None or not sandbox.enabled:
        return
    if sandbox.unavailable:
        warnings.warn(SandboxNotRunning(sandbox.unavailable), stacklevel=2)
    elif sandbox.failed:
        warnings.warn(
            SandboxNotRunning(
                f"the sandbox is enabled ({', '.join(sandbox.sources)}) but failed to start: the CLI said "
                f"{sandbox.failed!r} and ran the rest of the session's Bash commands unsandboxed"
            ),
            stacklevel=2,
        )


def _excluded(command: str, patterns: list[Any]) -> str:
    """The `excludedCommands` entry that unsandboxes `command` ("" when none does, or it is not one simple command)."""
    if _COMPOUND.search(command):
        return ""
    for pattern in map(str, patterns):
        if pattern.endswith(":*"):
            prefix = pattern[:-2]
            if command == prefix or command.startswith(prefix + " "):
                return pattern
        elif fnmatch.fnmatchcase(command, pattern):
            return pattern
    return ""


def _hidden(result: str, sandbox: Sandbox) -> str:
    """What hid a file the command was told does not exist: a `filesystem.denyRead` entry, or a `Read(...)` deny rule
    the sandbox holds as one ("" when none)."""
    entries = (sandbox.settings.get("filesystem") or {}).get("denyRead") or []
    places = [(sandbox.home + e[1:] if e.startswith("~") else e, f"denyRead {e!r}") for e in map(str, entries)]
    for place, what in [*places, *sandbox.read_denied]:
        if re.search(re.escape(place.rstrip("/")) + r"(/[^\n:]*)?: No such file or directory", result):
            return what
    return ""


def _read_rules(text: str, source: str, home: str, workspace: Path, settings_root: Path) -> list[tuple[str, str]]:
    """The places the `Read(...)` deny rules of a settings file name, as the CLI resolves a rule's path (`//` from
    the root, `~/` from HOME, `/` from the settings file's own root, else from the workspace), each with the rule
    and `source`.  A rule whose path is still a pattern once its trailing `/**` is dropped is left out."""
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        return []
    permissions = data.get("permissions") if isinstance(data, dict) else None
    deny = permissions.get("deny") if isinstance(permissions, dict) else None
    found = []
    for rule in deny if isinstance(deny, list) else []:
        if not (isinstance(rule, str) and rule.startswith("Read(") and rule.endswith(")")):
            continue
        path = rule[len("Read(") : -1].removesuffix("/**").removesuffix("/*")
        if not path or any(c in path for c in "*?["):
            continue
        if path.startswith("//"):
            place = path[1:]
        elif path.startswith("~/"):
            place = home + path[1:]
        elif path.startswith("/"):
            place = f"{settings_root}{path}"
        else:
            place = str(workspace / path.removeprefix("./"))
        found.append((place, f"the deny rule {rule} ({source})"))
    return found


def _merge(found: Sandbox, settings: Any, source: str) -> None:
    if isinstance(settings, dict) and settings:
        found.settings = {**found.settings, **settings}
        found.sources.append(source)


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, ValueError):
        return ""


def _sandbox_of(text: str) -> Any:
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        return None
    return data.get("sandbox") if isinstance(data, dict) else None
