"""`controlplane audit DIR`: the audit's own command line, turned into the pytest run that plays it.

Its options are the audit's, grouped, with a short `--help`; pytest's own are behind `--pytest-help`, and whatever
it does not know (or comes after `--`) goes to pytest as it is.  Pytest-free: it builds the argument list.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..agents.claude import PERMISSION_MODES, SANDBOX_LEVELS
from ..bypass.variant import FAMILIES
from ..config import WORKSPACE_TRUST
from ..errors import ConfigError
from .plan import AS_CONFIGURED, ROUTE_CLASSES

REPORTS = "controlplane-report"
FILES = {
    "html": "audit.html",
    "json": "audit.json",
    "sarif": "audit.sarif",
    "summary": "summary.md",
    "regression": "test_audit_regression.py",
}

_DESCRIPTION = """\
Audit an agent's control plane: every route and spelling of each target (a file written or read, a command run, the
workspace left), under each permission mode, played through the agent of DIR (its conftest.py's `agent`, or the
Claude Code CLI with DIR's own .claude/settings). No API key: a scripted model makes the attempts, and each is
judged by what really happened to the files. Start with --quick."""

_EPILOG = """\
examples:
  controlplane audit . --quick                      a first answer in a minute
  controlplane audit . --target "read .env" --mode default,acceptEdits
  controlplane audit . --shard 1/4 --out shard-1    one CI job of four (then: controlplane audit merge)
  controlplane audit . --cli 2.1.300,latest         the same items on two CLI releases, and what changed
  controlplane audit . --quick --fix                then the fix it proves: fix.patch (git apply fix.patch)
  controlplane audit . --quick --coverage           then each hook and rule removed in turn: the cells that flip
exit status: 0 nothing got through (everyday work blocked alone: 0, reported), 1 holes, 2 usage errors.
pytest's own options: --pytest-help; anything after -- goes to pytest."""


_CLI_HELP = (
    "the Claude Code CLI: a VERSION (from npm, once), latest, bundled, system, a PATH; several (2.1.300,latest): "
    "each item on each, and the drift between them"
)


def parser() -> argparse.ArgumentParser:
    """The parser of `controlplane audit` (its --help is this; the docs' reference is generated from it)."""
    p = argparse.ArgumentParser(
        prog="controlplane audit",
        usage="controlplane audit [DIR ...] [options] [-- PYTEST ARGS]",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
    )
    what = p.add_argument_group("what to audit")
    what.add_argument("dirs", nargs="*", metavar="DIR", help="the repository or test directory (default: .)")
    what.add_argument(
        "--quick", action="store_true", help="one canonical spelling per route class, under the agent's own mode"
    )
    what.add_argument(
        "--target", action="append", metavar='"FAMILY TARGET"',
        help='repeatable: "write PATH" (write .env, write secrets/), "read PATH" (read .env, read ~/.ssh/id_ed25519), '
             '"exec COMMAND" (exec curl), "exec scripts/x.sh", "escape", "egress HOST" (egress collector.example), '
             '"everyday" (the work a guard must allow: added to every audit unless --family leaves it out); '
             'default: what DIR has',
    )  # fmt: skip
    what.add_argument("--family", action="append", choices=FAMILIES, help="repeatable: only these families' targets")
    what.add_argument(
        "--mode", action="append", metavar="MODE",
        help=f"repeatable or a,b: {', '.join(PERMISSION_MODES)}, or {AS_CONFIGURED} (as configured); default: all",
    )  # fmt: skip
    what.add_argument(
        "--route", action="append", choices=tuple(ROUTE_CLASSES), metavar="CLASS",
        help=f"repeatable: {', '.join(ROUTE_CLASSES)}",
    )  # fmt: skip
    what.add_argument(
        "--sandbox", action="append", metavar="LEVEL",
        help=f"repeatable or a,b: {', '.join(SANDBOX_LEVELS)} (the OS sandbox off, as configured, hardened)",
    )  # fmt: skip
    what.add_argument(
        "--faults", action="store_true",
        help="the attacks again with each command hook made to fail one way at a time (its timeout, its interpreter "
             "missing, its script not executable or gone, exit 1, invalid JSON, a huge stdout): fail-open or not",
    )  # fmt: skip
    what.add_argument("--shard", metavar="K/N", help="play shard K of N (join them: controlplane audit merge)")
    run = p.add_argument_group("how it runs")
    run.add_argument(
        "-n", "--workers", metavar="N", help="agents in parallel (pytest-xdist; default: auto, one per core)"
    )
    run.add_argument(
        "--approval", choices=("deny", "allow"),
        help="the CLI's approval prompt: nobody answers (deny, default) or yes (allow: your guard alone)",
    )  # fmt: skip
    run.add_argument(
        "--workspace-trust", choices=WORKSPACE_TRUST,
        help="how the CLI sees DIR: as its owner (default: permissions.allow in force) or as a fresh clone (ignored)",
    )  # fmt: skip
    run.add_argument("--cli", metavar="CLI[,CLI...]", help=_CLI_HELP)
    run.add_argument("--cold", action="store_true", help="a fresh CLI per item (default: warm CLIs, same verdicts)")
    _writes(p.add_argument_group("what it writes"))
    return p


def _writes(out: argparse._ArgumentGroup) -> None:
    """The options of what the audit writes, --fix and --coverage among them."""
    out.add_argument(
        "--out", metavar="DIR",
        help=f"its files go here (default: {REPORTS}/<name of DIR>/): " + ", ".join(FILES.values()),
    )  # fmt: skip
    out.add_argument(
        "--fix", action="store_true",
        help="after the audit, propose the smallest settings change for each hole, prove it on a copy of DIR (the "
             "holes' sibling variants and the everyday work, every mode played) and write fix.patch (DIR alone)",
    )  # fmt: skip
    out.add_argument(
        "--coverage", action="store_true",
        help="after the audit, play it again once per hook and rule of DIR's settings, that one removed, on a copy: "
             "the cells that flip without it (DIR alone)",
    )  # fmt: skip
    out.add_argument("-v", "--verbose", action="count", default=0, help="each item, and each hole's traceback")
    out.add_argument("--tb", metavar="STYLE", help="tracebacks of holes: short, long, line (pytest's --tb)")
    out.add_argument("-h", "--help", action="help", help="this help")
    out.add_argument("--pytest-help", action="store_true", help="pytest's own options")


def default_out(directories: Sequence[str], cwd: Path) -> Path:
    """`controlplane-report/<name of the audited directory>/` in the current directory (names joined by `+`)."""
    names = [Path(os.path.abspath(d)).name or "root" for d in directories or ["."]]
    return cwd / REPORTS / "+".join(dict.fromkeys(names))


def pytest_args(argv: Sequence[str], cwd: Path) -> list[str]:
    """The pytest arguments that play `controlplane audit ARGV` (without the interpreter)."""
    argv = list(argv)
    passed = argv[argv.index("--") + 1 :] if "--" in argv else []
    mine = argv[: argv.index("--")] if "--" in argv else argv
    args, unknown = parser().parse_known_args(mine)
    if args.pytest_help:
        return ["--help"]
    dirs = args.dirs or ["."]
    out = Path(args.out) if args.out else default_out(dirs, cwd)
    command = ["--agent-audit", *dirs, "--agent-audit-out", str(out)]
    for flag, values in (
        ("--agent-audit-target", args.target),
        ("--agent-audit-family", args.family),
        ("--agent-audit-mode", [m for value in args.mode or [] for m in value.split(",") if m.strip()]),
        ("--agent-audit-route", args.route),
        ("--agent-audit-sandbox", [v for value in args.sandbox or [] for v in value.split(",") if v.strip()]),
    ):
        for value in values or []:
            command += [flag, value.strip()]
    if args.quick:
        command.append("--agent-audit-quick")
    if args.faults:
        command.append("--agent-audit-faults")
    if args.shard:
        command += ["--agent-audit-shard", args.shard]
    if args.approval:
        command += ["--agent-approval", args.approval]
    if args.workspace_trust:
        command += ["--workspace-trust", args.workspace_trust]
    clis = [c.strip() for c in (args.cli or "").split(",") if c.strip()]
    if len(clis) == 1:
        command += ["--agent-cli", clis[0]]
    for cli in clis if len(clis) > 1 else []:
        command += ["--agent-audit-cli", cli]
    if args.cold:
        command += ["-o", "agent_warm=false"]
    workers = args.workers or ("auto" if importlib.util.find_spec("xdist") else None)
    if workers and workers != "0":
        command += ["-n", workers]
    command += ["-v"] * args.verbose + ([f"--tb={args.tb}"] if args.tb else [])
    return command + unknown + passed


@dataclass(frozen=True)
class AfterAudit:
    """What runs after the audit, on one directory: `--fix` and `--coverage`."""

    directory: Path  # the audited directory, resolved
    out: Path  # the audit's folder, resolved
    kept: list[str]  # the options every later play keeps: the approval, the trust view, the CLI, warm or cold, -n
    selection: list[str]  # the audit's own choice of items: --target, --family, --mode, --route, --sandbox, --quick
    passed: list[str]  # what went to pytest after `--` (a -k or -m narrows the items too)
    fix: bool
    coverage: bool


def after_audit(argv: Sequence[str], cwd: Path) -> AfterAudit | None:
    """For `--fix` and `--coverage`: where and how their plays run; None without either.  More than one directory is a
    usage error (each changes or removes a setting of one repository)."""
    mine = list(argv[: list(argv).index("--")] if "--" in argv else argv)
    passed = list(argv[list(argv).index("--") + 1 :]) if "--" in argv else []
    args, _ = parser().parse_known_args(mine)
    if not (args.fix or args.coverage):
        return None
    dirs = args.dirs or ["."]
    flag = "--fix" if args.fix else "--coverage"
    if len(dirs) != 1 or not Path(dirs[0]).is_dir():
        raise ConfigError(
            f"{flag} takes one directory, the repository whose settings it changes; got {' '.join(dirs)}.",
            hint=f"Run `controlplane audit DIR {flag}` on each directory.",
        )
    out = Path(args.out) if args.out else default_out(dirs, cwd)
    given = (("--approval", args.approval), ("--workspace-trust", args.workspace_trust), ("--cli", args.cli),
             ("--workers", args.workers))  # fmt: skip
    kept = [word for flag, value in given if value for word in (flag, value)] + ["--cold"] * args.cold
    chosen = (("--target", args.target), ("--family", args.family), ("--mode", args.mode), ("--route", args.route),
              ("--sandbox", args.sandbox))  # fmt: skip
    selection = [word for flag, values in chosen for value in values or [] for word in (flag, value)]
    selection += ["--faults"] * args.faults
    return AfterAudit(
        Path(dirs[0]).resolve(),
        out.resolve(),
        kept,
        selection + ["--quick"] * args.quick,
        passed,
        args.fix,
        args.coverage,
    )
