"""Command hooks in settings files: found, and wrapped in the world's copies so that every run of one is seen.

Most Claude Code teams write their guards as command hooks in `.claude/settings.json` (a script that exits 2, or
prints a JSON decision), next to `permissions` rules.  The CLI runs them itself, so no SDK callback sees their
decisions.  For each run of the agent, every `{"type": "command"}` hook in the world's settings files — the project's
`.claude/settings.json` and `.claude/settings.local.json` in the workspace, the user's in `$CLAUDE_CONFIG_DIR` and
`~/.claude`, a `ClaudeAgentOptions(settings=...)` file or string, a plugin's `hooks/hooks.json` — runs through the
transparent recorder (hook_recorder.py), which passes stdin, environment, cwd, stdout, stderr and exit code through
unchanged and logs each run.  The files are the world's copies: the user's own are never touched, and the workspace's
are put back as they were after each run (unless the agent itself changed them).

A hook that the bypass harness planted (a poisoned repository's addition) is marked as such: its effects are an
attacker's, never left out as "the user's own hook's".
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .settings_summary import sandbox_words

RECORDER = Path(__file__).with_name("hook_recorder.py")
FAULT_FILE = "fault.json"  # in HOOKS_DIR while a hook fault is armed (hook_faults.py, hook_recorder.py)
HOOKS_DIR = "hooks"  # under the world's root: the runs' log, the listener's address, what the harness planted
_PREFIX = f"{shlex.quote(sys.executable)} -I -S {shlex.quote(str(RECORDER))} "
# The settings files of a world that the CLI may load (which ones it does is `setting_sources`' business).
WORKSPACE_FILES = {"project": ".claude/settings.json", "local": ".claude/settings.local.json"}
USER_FILES = ("$CLAUDE_CONFIG_DIR/settings.json", "~/.claude/settings.json")


@dataclass(frozen=True)
class CommandHook:
    """One command hook as a settings file declares it."""

    source: str  # "project", "local", "user", "flag" (ClaudeAgentOptions(settings=...)), "plugin"
    file: str  # as reports name it: ".claude/settings.json", "$CLAUDE_CONFIG_DIR/settings.json", ...
    event: str  # "PreToolUse", "SessionStart", ...
    matcher: str
    command: str
    planted: bool = False  # put there by the bypass harness (a poisoned repository), not the user's

    @property
    def label(self) -> str:
        """`the PreToolUse command hook `guard.py` (.claude/settings.json)`."""
        return f"the {self.event} command hook `{self.short}` ({self.file}{', planted' if self.planted else ''})"

    @property
    def short(self) -> str:
        """The command in at most 60 characters: its start and its end, where a script's name is."""
        command = " ".join(self.command.split())
        return command if len(command) <= 60 else command[:20] + "..." + command[-37:]

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> CommandHook:
        fields = {k: str(spec.get(k) or "") for k in ("source", "file", "event", "matcher", "command")}
        return cls(**fields, planted=bool(spec.get("planted")))


def matches(matcher: str, tool: str) -> bool:
    """Whether a hook's matcher covers `tool`, as the CLI reads it: empty or `*` every tool, else a regular expression
    the whole name must match (`Write|Edit`, `Notebook.*`), or the name itself if it is no valid expression."""
    if matcher in ("", "*"):
        return True
    try:
        return re.fullmatch(matcher, tool) is not None
    except re.error:
        return matcher == tool


def wrapped(hook: CommandHook) -> str:
    """The command line that runs `hook` through the recorder."""
    return _PREFIX + shlex.quote(json.dumps(asdict(hook), separators=(",", ":")))


def unwrapped(command: str) -> CommandHook | None:
    """The hook a recorder command line stands for, or None if `command` is the user's own."""
    if not command.startswith(_PREFIX):
        return None
    try:
        [spec] = shlex.split(command[len(_PREFIX) :])
        return CommandHook.from_spec(json.loads(spec))
    except ValueError:
        return None


def wrap(
    data: Any, source: str, file: str, planted: Collection[str] = (), timeouts: dict[str, int] | None = None
) -> tuple[Any, list[CommandHook]]:
    """`data` (a settings or hooks.json object) with each command hook run through the recorder, and the hooks found.
    A command already wrapped is wrapped anew (its file or origin may have changed); `planted`: commands the harness
    put there; `timeouts`: a `timeout` given to the hooks of these commands (a fault armed: hook_faults.py)."""
    found: list[CommandHook] = []
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        return data, found
    events: dict[str, Any] = {}
    for event, matchers in hooks.items():
        if not isinstance(matchers, list):
            events[event] = matchers
            continue
        events[event] = []
        for matcher in matchers:
            if not isinstance(matcher, dict) or not isinstance(matcher.get("hooks"), list):
                events[event].append(matcher)
                continue
            entries = []
            for entry in matcher["hooks"]:
                if isinstance(entry, dict) and entry.get("type") == "command" and isinstance(entry.get("command"), str):
                    known = unwrapped(entry["command"])
                    command = known.command if known else entry["command"]
                    hook = CommandHook(
                        source, file, str(event), str(matcher.get("matcher") or ""), command, command in planted
                    )
                    found.append(hook)
                    entry = {**entry, "command": wrapped(hook)}
                    if timeouts and command in timeouts:
                        entry["timeout"] = timeouts[command]
                entries.append(entry)
            events[event].append({**matcher, "hooks": entries})
    return {**data, "hooks": events}, found


@dataclass
class SettingsFile:
    """One settings file of the world: where, what hooks and permission rules it holds, and how to put it back."""

    source: str
    file: str  # as shown
    path: Path
    hooks: list[CommandHook] = field(default_factory=list)
    rules: dict[str, list[str]] = field(default_factory=dict)  # permissions: "allow", "deny", "ask" -> rules
    error: str = ""  # why it could not be read (not JSON): its hooks, if any, run unobserved
    sandbox: dict[str, Any] = field(default_factory=dict)  # its `sandbox` block, as written
    plugins: list[str] = field(default_factory=list)  # the plugins its `enabledPlugins` turns on
    original: bytes = b""
    written: bytes = b""

    def describe(self, *, allow_in_force: bool = True) -> str:
        """`.claude/settings.json: 2 command hooks (PreToolUse Bash `guard.sh`, ...); permissions.deny: 2 rules`;
        its `permissions.allow` entries listed only when they are in force (see `allow_in_force`), else counted."""
        if self.error:
            return f"{self.file}: {self.error}"
        parts = []
        if self.hooks:
            parts.append(
                f"{len(self.hooks)} command hook(s) ("
                + ", ".join(f"{h.event} {h.matcher or '*'} `{h.short}`" for h in self.hooks)
                + ")"
            )
        for kind, rules in self.rules.items():
            if rules and kind == "allow" and not allow_in_force:
                many = "entry" if len(rules) == 1 else "entries"
                parts.append(f"permissions.allow: {len(rules)} {many} the CLI ignores (the workspace is not trusted)")
            elif rules:
                parts.append(f"permissions.{kind}: {', '.join(rules)}")
        parts += [f"sandbox: {sandbox_words(self.sandbox)}"] * bool(self.sandbox)
        parts += [f"enabledPlugins: {', '.join(self.plugins)}"] * bool(self.plugins)
        return f"{self.file}: " + ("; ".join(parts) or "no hooks, no permission rules")


def read_settings(
    path: Path, source: str, file: str, planted: Collection[str] = (), timeouts: dict[str, int] | None = None
) -> SettingsFile:
    """A settings file, its command hooks wrapped in `written` (equal to `original` when there is nothing to wrap)."""
    found = SettingsFile(source, file, path, original=path.read_bytes())
    found.written = found.original
    try:
        data = json.loads(found.original)
    except ValueError as error:
        found.error = f"not JSON ({error}): the CLI ignores it, and so does the recorder"
        return found
    permissions = data.get("permissions") if isinstance(data, dict) else None
    if isinstance(permissions, dict):
        found.rules = {k: [str(r) for r in permissions.get(k) or []] for k in ("allow", "deny", "ask")}
    if isinstance(data, dict) and isinstance(data.get("sandbox"), dict):
        found.sandbox = data["sandbox"]
    plugins = data.get("enabledPlugins") if isinstance(data, dict) else None
    if isinstance(plugins, dict):
        found.plugins = [str(name) for name, on in plugins.items() if on]
    new, found.hooks = wrap(data, source, file, planted, timeouts)
    if found.hooks:
        found.written = json.dumps(new, indent=2).encode() + b"\n"
    return found


def remember(world: Any, hooks: list[CommandHook]) -> None:
    """Note the hooks wrapped in this world, so that what the CLI quotes of their command lines can be put back."""
    if hooks:
        with open(world.root / HOOKS_DIR / "wrapped.jsonl", "a", encoding="utf-8") as log:
            log.writelines(json.dumps(asdict(hook)) + "\n" for hook in hooks)


class Restorer:
    """Puts the user's own command back wherever the CLI quotes a hook's command line (an exit-2 hook's error reads
    `PreToolUse:Bash hook error: [COMMAND]: reason`), so the model, the cassette and the oracles see the agent as it is
    without the recorder.  Raw and JSON-escaped; nothing is done to text without the recorder's name in it."""

    def __init__(self, world: Any) -> None:
        self.world = world
        self._known = -1
        self._pairs: list[tuple[str, str]] = []

    def _load(self) -> list[tuple[str, str]]:
        path = self.world.root / HOOKS_DIR / "wrapped.jsonl"
        size = path.stat().st_size if path.is_file() else 0
        if size != self._known:
            self._known = size
            hooks = {CommandHook.from_spec(json.loads(line)) for line in path.read_text().splitlines()} if size else ()
            pairs = {}
            for hook in hooks:
                for encode in (lambda text: text, lambda text: json.dumps(text, ensure_ascii=False)[1:-1]):
                    pairs[encode(wrapped(hook))] = encode(hook.command)
            self._pairs = sorted(pairs.items(), key=lambda pair: -len(pair[0]))
        return self._pairs

    def text(self, text: str) -> str:
        if RECORDER.name not in text:
            return text
        for ours, theirs in self._load():
            text = text.replace(ours, theirs)
        return text

    def body(self, body: bytes) -> bytes:
        if RECORDER.name.encode() not in body:
            return body
        return self.text(body.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


class WorldHooks:
    """The settings files of a world, their command hooks wrapped for one run and put back after it."""

    def __init__(self, world: Any, files: list[SettingsFile]) -> None:
        self.world = world
        self.files = files

    @classmethod
    def install(cls, world: Any) -> WorldHooks:
        """Wrap the command hooks of the world's settings files (workspace and user), in place."""
        directory = world.root / HOOKS_DIR
        directory.mkdir(exist_ok=True)
        from .hook_faults import armed_timeouts  # it builds on this module

        planted = planted_commands(world)
        timeouts = armed_timeouts(world)
        places = [(source, world.workspace / name, name) for source, name in WORKSPACE_FILES.items()]
        places += [
            ("user", world.config_dir / "settings.json", USER_FILES[0]),
            ("user", world.home / ".claude" / "settings.json", USER_FILES[1]),
        ]
        files = []
        for source, path, shown in places:
            if path.is_file() and not path.is_symlink():  # a link planted to point elsewhere is not rewritten there
                found = read_settings(path, source, shown, planted, timeouts)
                if found.written != found.original:
                    path.write_bytes(found.written)  # in place: the file keeps its inode (hardlinks see the same)
                files.append(found)
        remember(world, [hook for found in files for hook in found.hooks])
        return cls(world, files)

    @property
    def hooks(self) -> list[CommandHook]:
        return [hook for found in self.files for hook in found.hooks]

    def restore(self) -> None:
        """Put each wrapped file back as it was, unless the run changed it (then it is the agent's doing, kept)."""
        for found in self.files:
            if found.written == found.original:
                continue
            try:
                if found.path.read_bytes() == found.written:
                    found.path.write_bytes(found.original)
            except OSError:
                pass  # deleted or replaced by the run: what the agent did stays

    def describe(self) -> list[str]:
        return [found.describe() for found in self.files]


def planted_commands(world: Any) -> set[str]:
    """The hook commands the bypass harness planted in this world (see `mark_planted`)."""
    path = world.root / HOOKS_DIR / "planted.json"
    try:
        return set(json.loads(path.read_text()))
    except (OSError, ValueError):
        return set()


def mark_planted(world: Any, data: Any) -> None:
    """Remember the command hooks in `data` (settings the harness is planting) as planted, not the user's."""
    _, hooks = wrap(data, "planted", "planted")
    if not hooks:
        return
    directory = world.root / HOOKS_DIR
    directory.mkdir(exist_ok=True)
    known = planted_commands(world) | {hook.command for hook in hooks}
    (directory / "planted.json").write_text(json.dumps(sorted(known)))


def wrapped_flag_settings(value: str, world: Any) -> tuple[str, SettingsFile | None]:
    """`ClaudeAgentOptions(settings=...)` (a JSON string or a file's path) with its command hooks wrapped: the value
    to pass instead (a file in the world when it was a path), and what it holds."""
    directory = world.root / HOOKS_DIR
    directory.mkdir(exist_ok=True)
    planted = planted_commands(world)
    if value.lstrip().startswith("{"):
        try:
            data = json.loads(value)
        except ValueError:
            return value, None  # the CLI says what is wrong with it
        new, hooks = wrap(data, "flag", "ClaudeAgentOptions(settings=...)", planted)
        found = SettingsFile("flag", "ClaudeAgentOptions(settings=...)", directory / "flag-settings.json", hooks)
        remember(world, hooks)
        return (json.dumps(new) if hooks else value), found
    path = Path(value) if Path(value).is_absolute() else world.workspace / value
    if not path.is_file():
        return value, None
    found = read_settings(path, "flag", f"ClaudeAgentOptions(settings={value!r})", planted)
    remember(world, found.hooks)
    if found.written == found.original:
        return value, found
    copy = directory / f"flag-settings-{len(list(directory.glob('flag-settings-*')))}.json"
    copy.write_bytes(found.written)
    return str(copy), found


def wrapped_plugin(path: str, world: Any) -> tuple[str, SettingsFile | None]:
    """A local plugin (`{"type": "local", "path": ...}`) with the command hooks of its `hooks/hooks.json` wrapped: the
    path of a copy in the world when it has any, and what they are."""
    import shutil

    source = Path(path)
    hooks_file = source / "hooks" / "hooks.json"
    if not hooks_file.is_file():
        return path, None
    found = read_settings(hooks_file, "plugin", f"plugin {source.name}: hooks/hooks.json", planted_commands(world))
    (world.root / HOOKS_DIR).mkdir(exist_ok=True)
    remember(world, found.hooks)
    if found.written == found.original:
        return path, found
    copy = world.root / HOOKS_DIR / "plugins" / source.name
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(source, copy, symlinks=True)
    (copy / "hooks" / "hooks.json").write_bytes(found.written)
    return str(copy), found


def trust_view(trust: str) -> str:
    """What a trust view (`--workspace-trust`) means for the agent's permission rules: `owner (permissions.allow in
    force)`, `clone (the CLI ignores permissions.allow)`."""
    return "clone (the CLI ignores permissions.allow)" if trust == "clone" else "owner (permissions.allow in force)"


def trust_line(trust: str) -> str:
    """The trust view as a header says it: `workspace trust: owner (permissions.allow in force)`."""
    return f"workspace trust: {trust_view(trust)}"


def allow_in_force(directory: Path, found: SettingsFile, trust: str) -> bool:
    """Whether the CLI honours the `permissions.allow` entries of `found`, a project settings file of `directory`,
    in the trust view `trust`.  Measured on CLI 2.1.332: in a workspace it trusts, all of them; in an untrusted one it
    ignores those of `.claude/settings.json` ("Ignoring N permissions.allow entries from .claude/settings.json: this
    workspace has not been trusted") and those of a `.claude/settings.local.json` that git tracks (a committed one,
    as a fresh clone has it), and honours an untracked `settings.local.json` (a file only its owner's checkout has)."""
    if trust != "clone" or found.source not in WORKSPACE_FILES:
        return True
    return found.source == "local" and not _tracked(directory, WORKSPACE_FILES["local"])


def _tracked(directory: Path, name: str) -> bool:
    """Whether git tracks `name` in the repository `directory` is in (False outside one, or without git)."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(directory), "ls-files", "--error-unmatch", "--", name],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def project_settings(directory: Path) -> list[SettingsFile]:
    """The project settings files a repository holds (`.claude/settings.json`, `.claude/settings.local.json`), read."""
    return [
        read_settings(directory / name, source, name)
        for source, name in WORKSPACE_FILES.items()
        if (directory / name).is_file()
    ]
