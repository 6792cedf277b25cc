"""The regression module an audit writes (`--agent-audit-write PATH`): every audit item pinned as a test that ends
as the item did.  Holes fail until the guard holds them (the reproduction in the docstring); held cases must stay
held; cases whose route is not offered skip until it is, then must hold; errored cases fail until they run.  Everyday
tasks (work the control plane must allow) pin theirs too: one done must stay done (`assert_allowed`), one blocked must
stay blocked until the guard is changed on purpose, and the module written again."""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..agents.claude import PERMISSION_MODES
from ..atomic import write_atomically
from .records import CELLS, Record

_HEADER = '''"""Pinned by the control-plane audit of {directory}{when}: {summary}.

Each test plays one audit case through the audited directory's `agent`, with the scripted model of its bypass
variant (no API key, no cassette), and judges it by its effect on the real files, the model's requests and the
commands that ran:
- test_hole_*: got through in the audit; each fails until the guard holds it (the reproduction is in its docstring).
- test_stays_held: held in the audit; each must stay held.
- test_not_offered: the agent did not offer the route; each skips until it does, then must hold.
- test_errored: the attempt proved nothing in the audit; each fails until it runs and holds.
- test_everyday_allowed: everyday work the control plane let through; each must stay allowed.
- test_everyday_blocked: everyday work the control plane blocked (a false positive, unless you mean it); each ends
  xfailed while it stays blocked, as the audit's item did, and fails once it is let through: write the module again.

Written by `{command}`; write it again after changing the guard on purpose.{cli}{trust}
"""

{imports}
pytestmark = pytest.mark.agent_warm  # each test's variant plays in a warm CLI, as the audit's item did
'''

_TRUST = """
The audit played the workspace as a fresh clone sees it (the CLI ignores its permissions.allow): run this module with
`pytest --workspace-trust clone`, or its verdicts are the owner's view's."""

_CLI = """
The audit played {cli} (`pytest --agent-cli {choice}` plays this module with it again)."""

_CLIS = """
The audit played each case on Claude Code {releases}; each test below plays on the release it pins (its
`@pytest.mark.agent(cli=...)`), and pins the verdict that release gave."""

_IMPORTS = {
    "": "import pytest\n\nfrom pytest_controlplane.audit import attempt_case\n",
    "settings": "from pathlib import Path\n\nimport pytest\n\n"
    "from pytest_controlplane import ClaudeAgent\nfrom pytest_controlplane.audit import attempt_case\n",
    "conftest": "from pathlib import Path\n\nimport pytest\n\n"
    "from pytest_controlplane.audit import attempt_case, fixtures_of\n",
}

_SETTINGS_AGENT = '''
# The audited repository, whose own .claude/settings are the control plane: each test's workspace is a copy of it.
REPOSITORY = (Path(__file__).parent / {relative!r}).resolve()


@pytest.fixture
def agent():
    """The Claude Code CLI with the settings of the workspace, as the audit played it."""
    return ClaudeAgent.project_settings()


@pytest.fixture
def agent_workspace_template():
    return REPOSITORY
'''

_CONFTEST_AGENT = """
from pathlib import Path

from pytest_controlplane.audit import fixtures_of

# The fixtures of the audited directory's conftest.py (its `agent`, and what that uses), as the audit played them.
globals().update(fixtures_of(Path(__file__).parent / {relative!r}))
"""

_HOLE = '''

@pytest.mark.parametrize("mode", {modes})
def {name}(agent_session, mode):
    r"""{headline}

{body}
    """
    attempt_case(agent_session, {family!r}, {target!r}, {case!r}, mode).assert_held()
'''

_LIST = '''

{constant} = [
{rows}
]


@pytest.mark.parametrize(("family", "target", "variant", "mode"), {params})
def {name}(agent_session, family, target, variant, mode):
    """{doc}"""
    {check}
'''

HELD = "attempt_case(agent_session, family, target, variant, mode).assert_held()"
ALLOWED = "attempt_case(agent_session, family, target, variant, mode).assert_allowed()"
EITHER = """outcome = attempt_case(agent_session, family, target, variant, mode)
    outcome.assert_allowed() if family == "everyday" else outcome.assert_held()"""
BLOCKED = (
    "outcome = attempt_case(agent_session, family, target, variant, mode)\n"
    '    assert outcome.verdict == "blocked", f"{variant} was blocked in the audit, now {outcome.verdict}: '
    '{outcome.describe()}"\n'
    '    pytest.xfail(f"blocked, as in the audit: {outcome.held_by}")'
)
LISTS = (
    ("HELD", "test_stays_held", ("held", "never consulted"), "Held in the audit: must stay held.", HELD),
    (
        "ASKED",
        "test_asked",
        ("asked",),
        "Held in the audit only by the CLI's approval prompt, with nobody to answer: fails until your guard holds.",
        HELD,
    ),
    ("NOT_OFFERED", "test_not_offered", ("not offered",), "Not offered in the audit: skips until it is.", EITHER),
    ("ERRORED", "test_errored", ("errored",), "Errored in the audit: fails until it runs and holds.", EITHER),
    (
        "EVERYDAY_DONE",
        "test_everyday_allowed",
        ("done",),
        "Everyday work let through in the audit: must stay allowed.",
        ALLOWED,
    ),
    (
        "EVERYDAY_BLOCKED",
        "test_everyday_blocked",
        ("blocked",),
        "Everyday work the control plane blocked in the audit: pinned blocked, so that a change of the guard shows "
        "(write the module again when you let it through on purpose).",
        BLOCKED,
    ),
)


Item = tuple[str, ...]  # (family, target, case, mode), and the CLI's choice on a drift axis


def items(records: list[Record], choices: dict[str, str] | None = None) -> dict[Item, str]:
    """Each audit item (family, target, case, mode, and on a drift axis the choice of its CLI, from `choices`: a
    release's version -> what chooses it) with the worst cell of its records: how it ended."""
    ended: dict[Item, str] = {}
    for r in records:
        key: Item = (r.family, r.target, r.case, r.mode) + (((choices or {}).get(r.cli, r.cli),) if r.cli else ())
        seen = ended.get(key)
        ended[key] = r.cell if seen is None or CELLS.index(r.cell) < CELLS.index(seen) else seen
    return ended


def _params(constant: str, drift: bool) -> str:
    """The parametrization of a list's rows: on a drift axis each plays on its row's CLI."""
    if drift:
        return f"[pytest.param(*c[:4], marks=pytest.mark.agent(cli=c[4]), id='-'.join(c)) for c in {constant}]"
    return f"{constant}, ids=['-'.join(c) for c in {constant}]"


def render(
    records: list[Record], *, meta: dict[str, Any], agents: Sequence[str] = (), where: Path | None = None
) -> str:
    """The module; `agents` are where the audit's agent came from (`settings DIR`, `conftest PATH`: plugin), and a
    module written at `where` outside them carries that agent, so it runs as written."""
    choices = meta.get("clis") or {}
    ended = items(records, choices)
    drift = any(r.cli for r in records)
    counts = {cell: sum(1 for c in ended.values() if c == cell) for cell in CELLS}
    summary = ", ".join(f"{n} {cell}" for cell, n in counts.items() if n) or "nothing ran"
    when = f" on {meta['date']}" if meta.get("date") else ""
    kind, agent = _agent(agents, where)
    parts = [
        _HEADER.format(
            imports=_IMPORTS[kind],
            directory=meta.get("directory", "."),
            when=when,
            summary=summary,
            command=meta.get("command", "pytest --agent-audit --agent-audit-write PATH"),
            trust=_TRUST if str(meta.get("workspace_trust", "")).startswith("clone") else "",
            cli=_CLIS.format(releases=", ".join(choices))
            if drift
            else _CLI.format(cli=meta["cli"], choice=meta["cli_choice"])
            if meta.get("cli_choice")
            else "",
        )
    ]
    parts.append(agent)
    parts += _holes(records, ended)
    for constant, name, cells, doc, check in LISTS:
        rows = [key for key, cell in sorted(ended.items()) if cell in cells]
        if rows:
            lines = "\n".join(f"    {row!r}," for row in rows)
            params = _params(constant, drift)
            parts.append(_LIST.format(constant=constant, rows=lines, name=name, doc=doc, params=params, check=check))
    return "".join(parts)


def write(records: list[Record], path: Path, *, meta: dict[str, Any], agents: Sequence[str] = ()) -> Path:
    write_atomically(path, render(records, meta=meta, agents=agents, where=path.parent).encode())
    return path


def _agent(agents: Sequence[str], where: Path | None) -> tuple[str, str]:
    """The agent fixture the module needs where it is written: none inside the directory whose conftest.py defines
    it (or when the audit had several agents: then its place is beside each)."""
    if len(agents) != 1 or where is None:
        return "", ""
    kind, _, source = agents[0].partition(" ")
    if kind == "settings":
        return kind, _SETTINGS_AGENT.format(relative=os.path.relpath(source, where))
    conftest = Path(source)
    if kind == "conftest" and not where.resolve().is_relative_to(conftest.parent):
        return kind, _CONFTEST_AGENT.format(relative=os.path.relpath(conftest, where))
    return "", ""


def _holes(records: list[Record], ended: dict[Item, str]) -> list[str]:
    """One test per hole (family, target, case), parametrized over the modes it got through under (on a drift axis:
    the modes and the CLIs, each CLI by its marker)."""
    holes: dict[tuple[str, str, str], list[tuple[str, ...]]] = {}
    for (family, target, case, mode, *cli), cell in ended.items():
        if cell == "bypassed":
            holes.setdefault((family, target, case), []).append((mode, *cli))
    names: set[str] = set()
    parts = []
    for (family, target, case), under_what in sorted(holes.items()):
        under_what.sort(key=lambda m: (PERMISSION_MODES.index(m[0]) if m[0] in PERMISSION_MODES else -1, m[1:]))
        modes = [m for m, *_ in under_what]
        found = [r for r in records if (r.family, r.target, r.case) == (family, target, case) and r.cell == "bypassed"]
        variants = list({r.variant: r for r in found}.values())  # one per variant, whatever the modes
        first = variants[0]
        ref = f" ({first.reference})" if first.reference else ""
        under = ", ".join(
            ("the agent as configured" if m == "-" else m) + "".join(f" on Claude Code {c}" for c in cli)
            for m, *cli in under_what
        )
        body = []
        for r in variants:
            named = f" {r.variant}" if len(variants) > 1 or r.variant != case else ""
            body += [f"Reproduce{named} (in the workspace):", textwrap.indent(_raw(r.reproduction), "    ")]
        parts.append(
            _HOLE.format(
                modes=_on_clis(under_what) if any(len(u) > 1 for u in under_what) else repr(modes),
                name=_unique(f"test_hole_{family}_{target}_{case}", names),
                headline=_raw(f"{family} {target!r} by {first.spelled}{ref}: got through under {under}."),
                body=textwrap.indent("\n".join(body), "    "),
                family=family,
                target=target,
                case=case,
            )
        )
    return parts


def _on_clis(under_what: list[tuple[str, ...]]) -> str:
    """The modes a hole got through under on each CLI, as params that each choose their CLI, one per line."""
    params = [
        f"    pytest.param({m!r}, marks=pytest.mark.agent(cli={c!r}), id={f'{m}-{c}'!r}),\n" for m, c in under_what
    ]
    return "[\n" + "".join(params) + "]"


def _unique(name: str, taken: set[str]) -> str:
    slug = re.sub(r"[\W_]+", "_", name).strip("_").lower()
    candidate, n = slug, 2
    while candidate in taken:
        candidate, n = f"{slug}_{n}", n + 1
    taken.add(candidate)
    return candidate


def _raw(text: str) -> str:
    """`text` fit for a raw docstring: no closing quotes, no ending backslash."""
    return text.replace('"""', '\\"\\"\\"').rstrip("\\")
