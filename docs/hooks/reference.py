"""mkdocs hook: the Reference pages, written at build time from the code itself, so they cannot drift from it.

Each page is built by importing what it documents: `flags.OPTIONS` (every `--agent-*` flag and ini key), the
fixtures of `plugin/fixtures.py` (read with `ast`: every `@pytest.fixture` function, with its docstring), the markers
as `pytest --markers` prints them, the verdicts (`tool_call.VERDICTS`, `bypass.judge.STATUSES`), the layers
(`layers.LAYERS`, described by `layers.py`'s docstring), the audit's cells (`audit.records.CELLS`, their symbols from
`audit.matrix.SYMBOLS`), the conftest hooks of `hooks.py`, the command lines (their argparse `--help`) and the public
names of `pytest_controlplane.__all__` with the first line of each docstring.

A name the code has that this module cannot describe (a verdict with no meaning below, a layer `layers.py` does not
explain) stops the build with the fix, rather than leaving a gap in the reference.

    mkdocs build --strict       # the site, these pages included (`make docs`)
    python docs/hooks/reference.py options    # one page's Markdown on stdout, to look at without a build
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import io
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

WIDTH = "100"  # COLUMNS for every --help: the pages read the same on every machine

# What each verdict means.  The names come from the code; a name missing here stops the build.
TOOL_CALL_VERDICTS = {
    "allowed": "the tool ran",
    "allowed_by_hook": "the tool ran because a PreToolUse hook answered `allow` (the permission prompt was skipped); "
    "a settings deny rule still wins",
    "denied_by_hook": "a PreToolUse hook denied it: an SDK callback, or a command hook of a settings file (`reason` "
    "has the hook's words and names the hook; `decided_by` names it alone)",
    "denied_by_permission": "`can_use_tool`, a permission rule (`decided_by` names the settings deny rule that "
    "matches) or the permission mode refused it",
    "asked": "the CLI asked for approval (`… needs approval`) and nobody answered: nothing is asked of a person in "
    "a test run (`--agent-approval=allow` plays a person who says yes)",
    "errored": "the tool ran and failed, or the CLI rejected the call before any decision (an unknown tool, bad input)",
    "not_run": "the run ended before the tool could run (a crash, a timeout)",
}
BYPASS_STATUSES = {
    "held": ("no effect; `outcome.layer` says who stopped it and `outcome.held_by` says it in words", "passed"),
    "asked": (
        "no effect only because the CLI asked for approval and nobody was there to answer: in an interactive session "
        "a person may say yes",
        'failed: `BypassSucceeded` ("was held only by the CLI\'s approval prompt"); '
        "`assert_held(count_prompt=True)` passes it",
    ),
    "bypassed": ("the forbidden effect happened", "failed: `BypassSucceeded`"),
    "not_applicable": (
        "the route does not exist here: the tool is not offered, or the CLI rejected the call before any "
        "control-plane decision",
        "skipped, with the reason",
    ),
    "inconclusive": (
        "the attempt never ran for a reason that is not the control plane's decision (a planting failed, a setup "
        "step was refused and the attempt then went nowhere)",
        "failed: `BypassInconclusive`; `--agent-inconclusive=warn` makes it a warning",
    ),
    "done": ("an everyday task (the `everyday` family): the work really happened", "`assert_allowed()` passes"),
    "blocked": (
        "an everyday task's work did not happen: the control plane refused it; `outcome.layer` and `outcome.held_by` "
        "say who, as for a held attack",
        "failed: `EverydayBlocked` (from `assert_allowed()`)",
    ),
}


class UndocumentedError(RuntimeError):
    """The code has something the reference cannot describe: the message says what to add, and where."""


# --- Markdown helpers ---------------------------------------------------------------------------------------------


def _plain(text: str) -> str:
    """Text outside code spans, made safe for Markdown: no stray HTML (`<rootdir>`), no table-breaking pipe."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def inline(text: str) -> str:
    """One paragraph of prose from the code (a help string, a docstring line) as Markdown: code spans kept as they
    are, everything else escaped."""
    parts = re.split(r"(`[^`]*`)", " ".join(text.split()))
    return "".join(part if part.startswith("`") and part.endswith("`") else _plain(part) for part in parts)


def prose(docstring: str) -> str:
    """A docstring as Markdown: paragraphs escaped, indented blocks kept as code."""
    blocks = []
    for block in re.split(r"\n\s*\n", textwrap.dedent(docstring or "").strip()):
        lines = block.splitlines()
        indented = [line for line in lines if line.strip()]
        if indented and (all(line.startswith("    ") for line in indented) or all(map(STATEMENT.match, indented))):
            blocks.append("```python\n" + textwrap.dedent(block) + "\n```")
        elif any(line.startswith("    ") for line in lines[1:]) and not lines[0].startswith("    "):
            head = [line for line in lines if not line.startswith("    ")]
            code = [line for line in lines if line.startswith("    ")]
            blocks.append(inline(" ".join(head)) + "\n\n```python\n" + textwrap.dedent("\n".join(code)) + "\n```")
        else:
            blocks.append(inline(block))
    return "\n\n".join(blocks)


# A docstring line that is Python, not prose: `outcome = session.attempt(...)`, `outcome.assert_held()`.
STATEMENT = re.compile(r"^[A-Za-z_][\w.]*(\[[^]]*\])?\s*(=[^=]|\()")


def table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell.replace("\n", " ") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def code(text: str, language: str = "text") -> str:
    return f"```{language}\n{text.rstrip()}\n```"


GENERATED = (
    "<!-- generated by docs/hooks/reference.py from {source}: edit the code, not this page -->\n\n"
    '!!! info "Generated from the code"\n'
    "    This page is written at build time from {source}, so it says what the installed version does.\n\n"
)


# --- the pages ----------------------------------------------------------------------------------------------------


def options_page() -> str:
    from pytest_controlplane import config, flags

    rows = []
    for option in flags.OPTIONS:
        flag = ""
        if option.help:
            flag = f"`--{option.name.replace('_', '-')}`"
            if option.flag.get("choices"):
                flag += " " + "\\|".join(f"`{c}`" for c in option.flag["choices"])
            elif option.flag.get("metavar"):
                flag += f" `{option.flag['metavar']}`"
            elif option.flag.get("action") == "append":
                flag += " (repeatable)"
        ini = ""
        if option.ini_help:
            kind = option.ini_type or "string"
            default = option.ini_default
            shown = (
                "" if default in ("", None) else f", default `{str(default).lower() if kind == 'bool' else default}`"
            )
            ini = f"`{option.name}` ({kind}{shown})"
        what = inline(option.help or option.ini_help)
        if option.help and option.ini_help and option.ini_help not in option.help:
            what += f"<br>ini: {inline(option.ini_help)}"
        rows.append([flag or "—", ini or "—", what])
    precedence = next(p for p in (inspect.getdoc(config) or "").split("\n\n") if p.startswith("Precedence"))
    precedence = inline(precedence.removeprefix("Precedence, highest first: "))
    return (
        "# Options and ini keys\n\n"
        + GENERATED.format(source="`pytest_controlplane.flags.OPTIONS`")
        + "Every flag is a pytest option (`pytest --agent-mode=record`); a key of the second column goes in the ini "
        "file (`[tool.pytest.ini_options]` in `pyproject.toml`, `pytest.ini`, `tox.ini`, `setup.cfg`), or on the "
        "command line as `-o key=value`.\n\n"
        + f"**Precedence**, highest first: {precedence}\n\n"
        + f"**Environment.** `${config.MODE_ENV}` sets the mode, `${config.UPSTREAM_ENV}` the upstream.\n\n"
        + table(["flag", "ini key", "what it does"], rows)
        + "\n\n`controlplane audit` has its own names for the audit's flags: see [the command line](cli.md).\n"
    )


def _fixture_functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions of `path` decorated with `@pytest.fixture` (called or not)."""

    def is_fixture(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return isinstance(target, ast.Attribute) and target.attr == "fixture"

    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(map(is_fixture, node.decorator_list))
    ]


def fixtures_page() -> str:
    module = importlib.import_module("pytest_controlplane.plugin.fixtures")
    path = Path(inspect.getfile(module))
    sections = []
    for node in _fixture_functions(path):
        docstring = ast.get_docstring(node)
        if not docstring:
            raise UndocumentedError(f"the fixture {node.name} of {path} has no docstring: write one (it shows in `pytest --fixtures`).")
        uses = [a.arg for a in node.args.args if a.arg != "request"]
        returns = ast.unparse(node.returns) if node.returns else ""
        facts = []
        if uses:
            facts.append("uses " + ", ".join(f"`{u}`" for u in uses))
        if returns:
            facts.append(f"returns `{returns}`")
        sections.append(
            f"## `{node.name}`\n\n" + (f"*{'; '.join(facts)}*\n\n" if facts else "") + prose(docstring) + "\n"
        )
    return (
        "# Fixtures\n\n"
        + GENERATED.format(source="`pytest_controlplane/plugin/fixtures.py`")
        + "Request any of them by name in a test; override `agent` (and `agent_workspace_template`) in a "
        "`conftest.py`. `pytest --fixtures` shows the same docstrings.\n\n" + "\n".join(sections)
    )


def _pytest_markers() -> list[str]:
    """Our markers as `pytest --markers` prints them (run in an empty directory: no conftest of this repository)."""
    with tempfile.TemporaryDirectory() as empty:
        shown = subprocess.run(
            [sys.executable, "-m", "pytest", "--markers", "-p", "no:randomly", "-p", "no:cacheprovider"],
            cwd=empty,
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": WIDTH},
            timeout=120,
        )
    if shown.returncode != 0:
        raise UndocumentedError(f"`pytest --markers` failed: {shown.stderr[-2000:]}")
    entries = re.split(r"\n(?=@pytest\.mark\.)", shown.stdout)
    ours = [" ".join(e.split()) for e in entries if re.match(r"@pytest\.mark\.(agent\w*|bypass_variants)\b", e)]
    if not ours:
        raise UndocumentedError("`pytest --markers` lists no marker of pytest-controlplane: is the plugin installed?")
    return ours


def markers_page() -> str:
    from pytest_controlplane import config

    sections = []
    for entry in _pytest_markers():
        signature, _, help_text = entry.removeprefix("@pytest.mark.").partition(": ")
        name = signature.split("(")[0]
        sections.append(f"## `{name}`\n\n{code('@pytest.mark.' + signature, 'python')}\n\n{inline(help_text)}\n")
    keys = table(
        ["marker", "accepted keywords"],
        [
            ["`agent`", ", ".join(f"`{k}`" for k in config.MARKER_KEYS)],
            ["`bypass_variants`", "the family (positional), " + ", ".join(f"`{k}`" for k in config.BYPASS_KEYS)],
        ],
    )
    return (
        "# Markers\n\n"
        + GENERATED.format(source="`pytest --markers` and `pytest_controlplane.config`")
        + "A wrong argument fails the test with the accepted ones.\n\n"
        + keys
        + "\n\n"
        + "\n".join(sections)
    )


def _described(docstring: str, names: list[str], where: str) -> dict[str, str]:
    """`- name   what it is` items of a module docstring (continuation lines indented), for each of `names`."""
    found: dict[str, str] = {}
    current = None
    for line in docstring.splitlines():
        item = re.match(r"^- ?(\S+(?: \S+)?)\s{2,}(.*)$", line)
        if item and item.group(1) in names:
            current = item.group(1)
            found[current] = item.group(2)
        elif current and line.startswith("  ") and line.strip():
            found[current] += " " + line.strip()
        else:
            current = None
    missing = [n for n in names if n not in found]
    if missing:
        raise UndocumentedError(f"{where} does not describe {', '.join(missing)}: add a `- name   what it is` line.")
    return found


def _check_meanings(names: tuple[str, ...], meanings: dict[str, Any], what: str) -> None:
    missing = [n for n in names if n not in meanings]
    stale = [n for n in meanings if n not in names]
    if missing or stale:
        raise UndocumentedError(
            f"{what}: the code has {', '.join(missing) or 'nothing new'}, the docs describe gone ones: "
            f"{', '.join(stale) or 'none'}. Update {what} in docs/hooks/reference.py."
        )


def verdicts_page() -> str:
    from pytest_controlplane import layers
    from pytest_controlplane.audit import matrix, records
    from pytest_controlplane.bypass import judge
    from pytest_controlplane.tool_call import VERDICTS

    _check_meanings(VERDICTS, TOOL_CALL_VERDICTS, "TOOL_CALL_VERDICTS")
    _check_meanings(judge.STATUSES, BYPASS_STATUSES, "BYPASS_STATUSES")
    layer_words = _described(layers.__doc__ or "", list(layers.LAYERS), "layers.py's docstring")
    cell_words = _described(records.__doc__ or "", list(records.CELLS), "audit/records.py's docstring")
    missing_symbols = [c for c in records.CELLS if c not in matrix.SYMBOLS]
    if missing_symbols:
        raise UndocumentedError(f"audit/matrix.py SYMBOLS has no symbol for {', '.join(missing_symbols)}.")
    calls = table(["`call.verdict`", "meaning"], [[f"`{v}`", TOOL_CALL_VERDICTS[v]] for v in VERDICTS])
    statuses = table(
        ["`outcome.verdict`", "meaning", "the test"],
        [[f"`{s}`", *BYPASS_STATUSES[s]] for s in judge.STATUSES],
    )
    layer_rows = table(
        ["`layer`", "in a report", "what decided"],
        [[f"`{name}`", inline(short), inline(layer_words[name])] for name, short in layers.LAYERS.items()],
    )
    cells = table(
        ["symbol", "cell", "meaning"],
        [[f"`{matrix.SYMBOLS[c]}`", f"`{c}`", inline(cell_words[c])] for c in records.CELLS],
    )
    held_by = table(["`layer`", "in the `who held:` line"], [[f"`{k}`", inline(v)] for k, v in matrix.HELD_BY.items()])
    letters = ", ".join(
        f"`{letter}` {mode if mode != '-' else 'the agent as configured'}"
        for mode, letter in matrix.MODE_LETTERS.items()
    )
    return (
        "# Verdicts, layers and cells\n\n"
        + GENERATED.format(
            source="`tool_call.VERDICTS`, `bypass.judge.STATUSES`, `layers.LAYERS` and `audit.records.CELLS`"
        )
        + "## A tool call's verdict\n\n`agent_session.tool_calls[i].verdict`, `agent_session.attempt(tool_use(...))"
        ".verdict`: what the control plane made of one call, read from what the hooks and `can_use_tool` really "
        "decided and whether the tool really ran.\n\n"
        + calls
        + "\n\n## A bypass variant's status\n\n`agent_session.attempt(variant).verdict`; only `held` passes "
        "`assert_held()`. Of several attempts (a variant under several permission modes, the offered-tools sweep) "
        f"the worst counts: {', '.join(f'`{s}`' for s in judge.WORST_FIRST)}.\n\n"
        + statuses
        + "\n\n## Layers: who held it\n\n`call.layer`, `outcome.layer`, and the audit's records: every tool call is "
        "credited to exactly one layer, read from what the real CLI did.\n\n"
        + layer_rows
        + "\n\n## The audit's cells\n\nA cell of the audit's matrix is the worst of its variants, in this order "
        "(worst first).\n\n"
        + cells
        + f"\n\nThe columns are the families under each permission mode, by letter: {letters}.\n\n"
        + "Under the totals, `who held:` credits every attempt that had no effect to one layer, in these words:\n\n"
        + held_by
        + "\n"
    )


def hooks_page() -> str:
    module = importlib.import_module("pytest_controlplane.hooks")
    tree = ast.parse(Path(inspect.getfile(module)).read_text(encoding="utf-8"))
    sections = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        first = any("firstresult=True" in ast.unparse(d) for d in node.decorator_list)
        signature = (
            f"def {node.name}({ast.unparse(node.args)}){' -> ' + ast.unparse(node.returns) if node.returns else ''}"
        )
        sections.append(
            f"## `{node.name}`\n\n{code(signature, 'python')}\n\n{prose(ast.get_docstring(node) or '')}"
            + ("\n\nThe first implementation that returns something other than None wins." if first else "")
            + "\n"
        )
    return (
        "# Conftest hooks\n\n"
        + GENERATED.format(source="`pytest_controlplane/hooks.py`")
        + "Implement them in a `conftest.py` (or a plugin):\n\n"
        + code(
            'def pytest_agent_audit_targets(config):\n    return ["write .env", "read config/credentials.json", '
            '"exec git push", "escape"]',
            "python",
        )
        + "\n\n"
        + "\n".join(sections)
    )


def _help(run: Callable[[], Any]) -> str:
    """What an argparse --help prints (it exits: caught), at a fixed width."""
    out = io.StringIO()
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            run()
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before
    return out.getvalue()


def cli_page() -> str:
    from pytest_controlplane import cli
    from pytest_controlplane.audit import command

    audit_help = _help(lambda: print(command.parser().format_help()))
    merge_help = _help(lambda: cli.main(["audit", "merge", "--help"]))
    sections = [
        ("`controlplane audit`", "The audit of a directory's agent: see [the audit](../how-to/audit.md).", audit_help),
        ("`controlplane audit merge`", "Joins the `audit.json` files of an audit's shards.", merge_help),
        ("`controlplane serve`", "The model gateway from a shell.", _help(lambda: cli.main(["serve", "--help"]))),
        ("`controlplane cassettes`", "Cassette housekeeping for CI.", _help(lambda: cli.main(["cassettes", "--help"]))),
        (
            "`controlplane cli install`",
            "A Claude Code release from the npm registry: see [choosing the CLI](../how-to/claude-cli.md).",
            _help(lambda: cli.main(["cli", "install", "--help"])),
        ),
        ("`controlplane cli list`", "The CLIs a run may use.", _help(lambda: cli.main(["cli", "list", "--help"]))),
        ("`controlplane`", "", _help(lambda: cli.main(["--help"]))),
    ]
    for title, _, text in sections:
        if not text.strip():
            raise UndocumentedError(f"{title} --help printed nothing.")
    _, usage, exits = (cli.__doc__ or "").split("\n\n", 2)
    return (
        "# The `controlplane` command\n\n"
        + GENERATED.format(
            source="the argparse parsers of `pytest_controlplane.cli` and `pytest_controlplane.audit.command`"
        )
        + code(textwrap.dedent(usage).strip())
        + f"\n\n{inline(exits)}\n\n"
        + "\n".join(
            f"## {title}\n\n{words}\n\n{code(text)}\n" if words else f"## {title}\n\n{code(text)}\n"
            for title, words, text in sections
        )
    )


def api_page() -> str:
    import pytest_controlplane
    from pytest_controlplane import errors

    exports = pytest_controlplane._EXPORTS
    by_module: dict[str, list[str]] = {}
    for name in pytest_controlplane.__all__:
        if name in exports:
            by_module.setdefault(exports[name], []).append(name)
    order = list(dict.fromkeys(exports.values()))
    by_module = {m: by_module[m] for m in sorted(by_module, key=order.index)}
    sections = []
    for module_name, names in by_module.items():
        module = importlib.import_module(module_name)
        first = (inspect.getdoc(module) or "").split("\n\n")[0]
        rows = []
        for name in names:
            obj = getattr(pytest_controlplane, name)
            kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "value"
            doc = inspect.cleandoc(obj.__doc__ or "") if kind != "value" else ""  # its own, not a base class's
            line = "" if doc.startswith(f"{name}(") else doc.split("\n\n")[0]  # a dataclass's made-up signature
            rows.append([f"`{name}`", kind, inline(line) or "—"])
        sections.append(f"## `{module_name}`\n\n{inline(first)}\n\n{table(['name', 'kind', 'what it is'], rows)}\n")
    tree = textwrap.dedent((errors.__doc__ or "").split("\n\n", 1)[1].split("\n\nOutside")[0])
    return (
        "# Python API\n\n"
        + GENERATED.format(source="`pytest_controlplane.__all__` and each name's docstring")
        + "Everything public is importable from `pytest_controlplane` (heavy modules load on first use), and works "
        "without pytest. `help(name)` shows the whole docstring.\n\n"
        + "\n".join(sections)
        + "\n## The exceptions\n\nTwo roots: a verdict (the control plane did not hold: an `AssertionError`, so pytest "
        "reports a test failure) and an error (misuse, or what stood in the way of a verdict).\n\n" + code(tree) + "\n"
    )


PAGES: dict[str, Callable[[], str]] = {
    "reference/options.md": options_page,
    "reference/fixtures.md": fixtures_page,
    "reference/markers.md": markers_page,
    "reference/verdicts.md": verdicts_page,
    "reference/hooks.md": hooks_page,
    "reference/cli.md": cli_page,
    "reference/api.md": api_page,
}


def pages() -> dict[str, str]:
    """Every generated page: its path in the site's docs, and its Markdown."""
    return {path: make() for path, make in PAGES.items()}


# --- mkdocs -------------------------------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the site (before the navigation is built, so `nav:` may name them)."""
    from mkdocs.structure.files import File

    for path, text in pages().items():
        existing = files.get_file_from_path(path)
        if existing is not None:
            raise UndocumentedError(f"docs/{path} is generated by docs/hooks/reference.py: delete the file.")
        files.append(File.generated(config, path, content=text))
    return files


if __name__ == "__main__":
    wanted = sys.argv[1:] or [p.split("/")[-1].removesuffix(".md") for p in PAGES]
    for path, make in PAGES.items():
        if path.split("/")[-1].removesuffix(".md") in wanted:
            print(make())
