"""Which `permissions.deny` rules of the settings files cover a tool call, in the CLI's own semantics: a call the CLI's
permission system refused is credited to the rule that matches it (the CLI does not say which)."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..tool_call import ToolCall
from .settings_hooks import SettingsFile

# The rules the CLI applies to a tool besides its own (its semantics, CLI 2.1.332): every tool that runs a command is
# held by Bash rules (Monitor running `sudo` meets `Bash(sudo:*)`) and by the file rules of the files it names (`true >
# .env` meets `Edit(./.env)`); a file tool by the rules of its kind of access, and a write also by Read rules ("File is
# covered by a Read deny rule").
_READS, _WRITES = ("Read", "Glob", "Grep", "LS"), ("Write", "Edit", "NotebookEdit", "MultiEdit")
_FILE_RULES = ("Read", "Edit", "Write")


def _rule_tools(call: ToolCall) -> tuple[str, ...]:
    if isinstance(call.input.get("command"), str):
        return (call.name, "Bash", *_FILE_RULES)
    if call.name in _WRITES:
        return (call.name, "Edit", "Write", "Read")
    if call.name in _READS:
        return (call.name, "Read")
    return (call.name,)


def rules_for(call: ToolCall, settings: Sequence[SettingsFile]) -> tuple[list[str], bool]:
    """The `permissions.deny` rules of `settings` that match the call, each with its file, and True; else the rules
    that may have (for a command, the file rules: the CLI applies `Read(...)` and `Edit(...)` to the files a command
    names, resolved; else every deny rule of its tools), and False."""
    found = [(rule, f) for f in settings for rule in f.rules.get("deny", [])]
    tools = _rule_tools(call)
    # a project's rules are relative to the project (the folder its .claude/ is in)
    matching = [(r, f.file) for r, f in found if _tool(r) in tools and _matches(r, call.input, f.path.parent.parent)]
    if matching:
        return [f"{rule} ({file})" for rule, file in matching], True
    rules = [(rule, f.file) for rule, f in found]
    mine = [(rule, file) for rule, file in rules if _tool(rule) in tools]
    files = [(rule, file) for rule, file in rules if _tool(rule) in _FILE_RULES]
    guesses = files if isinstance(call.input.get("command"), str) and files else mine
    return [f"{rule} ({file})" for rule, file in guesses], False


def covers(rule: str, call: ToolCall, root: Path | None = None) -> bool:
    """Whether a permission rule (of any kind: allow, deny, ask) applies to the call, in the CLI's semantics above
    (`root`: the project its settings file belongs to)."""
    return _tool(rule) in _rule_tools(call) and _matches(rule, call.input, root)


def _tool(rule: str) -> str:
    """The tool a permission rule is about: `Bash(rm:*)` -> Bash, `Read` -> Read."""
    return rule.split("(", 1)[0].strip()


def parse(rule: str) -> tuple[str, str | None]:
    """A permission rule as (tool, specifier): `Bash(git push:*)` -> ("Bash", "git push:*"), `Read` -> ("Read", None);
    ("", None) for what is no rule."""
    rule = rule.strip()
    tool = _tool(rule)
    if not tool or not tool.replace("_", "").isalnum():
        return "", None
    if "(" not in rule:
        return (tool, None) if rule == tool else ("", None)
    return (tool, rule[rule.index("(") + 1 : -1]) if rule.endswith(")") else ("", None)


def command_prefix(rule: str) -> str:
    """The command a Bash rule's specifier names, its `:*` or `*` dropped: `Bash(npm test:*)` -> `npm test`,
    `Bash(curl*)` -> `curl`; "" for any other rule."""
    tool, specifier = parse(rule)
    if tool != "Bash" or not specifier:
        return ""
    return re.split(r"[:*]", specifier, maxsplit=1)[0].strip()


def fetch_domain(rule: str) -> str:
    """The domain of a `WebFetch(domain:docs.example.com)` rule, as written; "" for any other rule."""
    tool, specifier = parse(rule)
    domain = (specifier or "").removeprefix("domain:") if tool == "WebFetch" else ""
    return domain.strip() if (specifier or "").startswith("domain:") and " " not in domain.strip() else ""


def _matches(rule: str, given: dict[str, Any], root: Path | None = None) -> bool:
    """Whether a rule's specifier covers the call, as the CLI reads it: for a command, a prefix (`curl:*`) or a glob
    of any of its simple commands, each without the variables and wrappers before it (`a && FOO=1 timeout 5 curl x`
    meets `Bash(curl:*)`); for a path, a glob of the path, or of a word of the command (`cat .env`, `true > ./.env`),
    as given and resolved from `root` (a link to .env is .env), in any case (`.ENV`).  A rule without a specifier
    covers every call of its tool."""
    if "(" not in rule or not rule.endswith(")"):
        return True
    specifier = rule[rule.index("(") + 1 : -1]
    command = given.get("command")
    if isinstance(command, str) and _tool(rule) not in _FILE_RULES:
        prefix = specifier[:-2] if specifier.endswith(":*") else None
        return any(
            (part == prefix or part.startswith(prefix + " "))
            if prefix is not None
            else fnmatch.fnmatch(part, specifier)
            for part in {command.strip(), *simple_commands(command)}
        )
    paths = [v for k, v in given.items() if k in ("file_path", "notebook_path", "path") and isinstance(v, str)]
    if isinstance(command, str):  # the words of its simple commands, redirections' targets among them
        paths = [word for part in simple_commands(command) for word in re.split(r"[\s<>]+", part) if word]
    if root is not None:
        paths += [os.path.realpath(os.path.join(root, os.path.expanduser(path))) for path in paths]
    pattern = specifier.removeprefix("./").replace("**", "*").lower()
    return any(fnmatch.fnmatchcase(p, pattern) or fnmatch.fnmatchcase(p, "*/" + pattern) for p in map(str.lower, paths))


_OPERATOR = re.compile(r"&&|\|\||\$\(|[;&|\n()`{}]")
_SUBSTITUTION = re.compile(r"\$\(|[`)]")  # what still splits inside double quotes
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*\s+")
# The wrappers the CLI looks through before it matches a command rule (measured on 2.1.332: a deny of `Bash(curl:*)`
# holds `timeout 5 curl …` and `nohup curl …`), with the options some take.
_WRAPPERS = re.compile(
    r"^(?:timeout|nice|nohup|stdbuf|time|command|builtin|env|exec|noglob|xargs|eval)(?:\s+-\S+(?:\s+\d+)?)*\s+(?:\d+\S*\s+)?"
)


def simple_commands(command: str) -> list[str]:
    """The simple commands of a shell command line (split at its operators, substitutions and groups, quotes and
    escapes taken out), each without leading variable assignments and wrappers.  Not a shell: a command the CLI sees
    through further (`${p}rl`) is read off its words instead, and says so."""
    parts = []
    for part in _split(command):
        part = part.strip()
        while True:
            stripped = _WRAPPERS.sub("", _ASSIGNMENT.sub("", part), count=1).strip()
            if stripped == part:
                break
            part = stripped
        if part:
            parts.append(part)
    return parts


def _split(command: str) -> list[str]:
    """`command` cut at its operators outside quotes (and at substitutions inside double quotes), with the quotes and
    escapes taken out: `\\curl`, `'curl'` and `c''url` all run curl."""
    parts: list[str] = []
    current: list[str] = []
    quote, i = "", 0
    while i < len(command):
        char = command[i]
        cut = _SUBSTITUTION if quote == '"' else _OPERATOR if not quote else None
        found = cut.match(command, i) if cut else None
        if found:
            parts.append("".join(current))
            current, i = [], found.end()
            continue
        if char == quote:
            quote = ""
        elif char in "'\"" and not quote:
            quote = char
        elif char == "\\" and quote != "'" and i + 1 < len(command):
            current.append(command[i + 1])
            i += 1
        else:
            current.append(char)
        i += 1
    return [*parts, "".join(current)]
