"""What a repository's control plane says about the network, as audit targets and piggyback words.

- an egress target (`egress collector.example`) when a rule or a hook speaks of the network: a `Bash(curl:*)` or
  `Bash(wget ...)` rule (allowed or denied), a `WebFetch(domain:...)` rule, or a command hook whose text (its command,
  and the script it runs when that script is in the repository) names curl, wget, nc, dig or a URL;
- the words the guard lets through whole (`allow_words`), for the `piggyback:<word>` variants: the hosts and
  addresses a hook's text names (a URL's host, `localhost`, an IP address, a domain on a line that allows), and the
  `permissions.allow` entries (a Bash command prefix such as `npm test`, a WebFetch domain).  The extraction is
  literal: a word the hook builds at run time is not found.

Each comes with why (`the hook .claude/hooks/x.sh names curl`).  The sandbox axis brings its own (`sandbox_targets`).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..agents.hook_needs import MAX_SCRIPT, command_words, script_in
from ..agents.permission_rules import command_prefix, fetch_domain
from ..agents.settings_hooks import CommandHook, project_settings
from ..bypass.corpus import default_target
from ..bypass.egress_routes import DEFAULT_HOST
from ..errors import ConfigError
from .targets import Derived

EGRESS = f"egress {DEFAULT_HOST}"
WAY_OUT = ("curl", "wget", "nc", "dig")  # the programs a hook or rule names that send out
_NETWORK_WORD = re.compile(rf"\b({'|'.join(WAY_OUT)})\b|\bhttps?://")
_URL_HOST = re.compile(r"\bhttps?://([A-Za-z0-9.-]+)")
_ADDRESS = re.compile(r"\b(localhost|(?:\d{1,3}\.){3}\d{1,3})\b")
_DOMAIN = re.compile(r"\b((?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,})\b")
_ALLOWING = re.compile(r"allow|approve|exit 0|permit|safe", re.I)
_FILE_ENDINGS = {"sh", "py", "js", "ts", "json", "md", "txt", "env", "yml", "yaml", "toml", "log", "lock", "cfg", "ini"}


def egress_targets(directory: Path) -> list[Derived]:
    """`egress collector.example`, for each network rule and hook of `directory`'s settings that says why."""
    derived = []
    for found in project_settings(directory):
        for kind in ("deny", "allow", "ask"):
            for rule in found.rules.get(kind, []):
                if fetch_domain(rule) or command_prefix(rule).split(" ")[0] in ("curl", "wget"):  # rules of a way out
                    derived.append(Derived(EGRESS, f"the {kind} rule {rule} in {found.file}"))
        for hook in found.hooks:
            for where, text in hook_texts(directory, hook):
                named = sorted({"a URL" if w.startswith("http") else w for w in _network_words(text)}, key=len)
                if named:
                    derived.append(Derived(EGRESS, f"the hook {where} names {' and '.join(named)}"))
    return derived


def _network_words(text: str) -> list[str]:
    return [m.group(0) for m in _NETWORK_WORD.finditer(text)]


def hook_texts(directory: Path, hook: CommandHook) -> list[tuple[str, str]]:
    """A command hook's texts, each with how a reader finds it: its command (`PreToolUse hook `x` in FILE`), and the
    script file it runs when that file is in `directory`."""
    texts = [(f"`{hook.short}` ({hook.event}, {hook.file})", hook.command)]
    root = directory.resolve()
    for word in command_words(hook.command, root):
        path = script_in(word, root)
        if path is not None:
            text = path.read_text(encoding="utf-8", errors="replace")[:MAX_SCRIPT]
            texts.append((path.resolve().relative_to(root).as_posix(), text))
    return texts


def allow_words(directory: Path) -> list[Derived]:
    """The words `directory`'s guard lets through whole (Derived.line is the word), each once: hosts and addresses
    its hooks name, then its `permissions.allow` command prefixes and WebFetch domains."""
    found: dict[str, Derived] = {}
    for settings in project_settings(directory):
        for hook in settings.hooks:
            for where, text in hook_texts(directory, hook):
                for word in _hosts(text):
                    found.setdefault(word, Derived(word, f"the hook {where} names {word}"))
        for rule in settings.rules.get("allow", []):
            word = _allowed(rule.strip())
            if word and word.split()[0] not in WAY_OUT:  # `Bash(curl:*)`: the way out itself
                found.setdefault(word, Derived(word, f"the allow rule {rule} in {settings.file}"))
    return list(found.values())


def _hosts(text: str) -> list[str]:
    """The hosts a hook's text names literally: a URL's host, `localhost` and IP addresses anywhere; a domain on a
    line that allows (`allow`, `approve`, `exit 0`), not a file name (`guard.sh`)."""
    words = [m.group(1) for m in _URL_HOST.finditer(text)] + [m.group(1) for m in _ADDRESS.finditer(text)]
    for line in text.splitlines():
        if _ALLOWING.search(line):
            words += [d for d in _DOMAIN.findall(line) if d.rsplit(".", 1)[-1].lower() not in _FILE_ENDINGS]
    return list(dict.fromkeys(w.lower().rstrip(".") for w in words if w))


def _allowed(rule: str) -> str:
    """`Bash(npm test:*)` -> `npm test`; `WebFetch(domain:docs.example.com)` -> `docs.example.com`; else ""."""
    return fetch_domain(rule) or command_prefix(rule)


def sandbox_targets() -> list[Derived]:
    """What the sandbox axis is about: the workspace left, the secrets of the home directory read, the network
    reached."""
    why = "the sandbox axis (--sandbox) plays what the OS sandbox confines"
    try:
        from ..bypass.home_secrets import HOME_SECRETS as secrets
    except ImportError:  # a corpus without helper module: the two the sandbox axis is most often asked about
        secrets = ("~/.ssh/id_ed25519", "~/.aws/credentials")  # type: ignore[assignment,unused-ignore]
    homes = [Derived(f"read {path}", why) for path in map(str, secrets) if _readable(path)]
    return [Derived("escape workspace", why), *homes, Derived(EGRESS, why)]


def _readable(path: str) -> bool:
    """Whether the read family takes `path` (a home directory's file) as a target."""
    try:
        default_target("read", path)
    except ConfigError:
        return False
    return True
