"""pytest wiring of an audit's end, last in the terminal: the matrix and the totals, the files it wrote into its
folder (the HTML page, the JSON records, SARIF, the Markdown summary, the regression module and the command that runs
it), and after a quick audit what the full one adds and how to shard it in CI."""

from __future__ import annotations

import datetime
import math
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from .audit_cases import audit_cases, auditing, cli_about, directories, full_cases, out_dir
from .ci import write_outputs
from .keys import AGENT_FROM, AUDIT
from .options import chosen_cli, workspace_trust

JOB_SECONDS = 600  # what one CI job of a sharded audit should take


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The matrix and totals; the files, each on a line; what a quick audit leaves out.  pytest's totals follow."""
    if not auditing(config):
        return
    from ..audit import Matrix, Record, dump, page, regression

    reports = [report for reports in terminalreporter.stats.values() for report in reports]
    records = [
        Record(**fields)
        for report in reports
        for key, value in getattr(report, "user_properties", [])
        if key == AUDIT
        for fields in value
    ]
    matrix = Matrix.of(records)
    terminalreporter.section("agent audit (pytest-controlplane)")
    for line in matrix.lines():
        terminalreporter.write_line(line)
    if not records:
        return
    out = out_dir(config)
    meta = _meta(config, out)
    json_path = Path(config.getoption("agent_audit_json") or out / "audit.json").resolve()
    module = Path(config.getoption("agent_audit_write") or out / "test_audit_regression.py").resolve()
    agents = {value for report in reports for key, value in getattr(report, "user_properties", []) if key == AGENT_FROM}
    written = [page.write(matrix, out / "audit.html", meta=meta)]
    dump(records, json_path, meta=meta, coverage=_coverage(terminalreporter, records, meta))
    written += [json_path, regression.write(records, module, meta=meta, agents=sorted(agents))]
    written += write_outputs(terminalreporter, config, out)
    terminalreporter.write_line("")
    for path in written:
        terminalreporter.write_line(f"written: {_shown(path)}")
    terminalreporter.write_line(f"pin every verdict as a test: pytest {_shown(module)}")
    if config.getoption("agent_audit_quick"):
        for line in _after_quick(config, reports):
            terminalreporter.write_line(line)


def _coverage(terminalreporter: Any, records: list[Any], meta: dict[str, Any]) -> dict[str, Any] | None:
    """audit.json's `coverage` (audit/coverage.py), and a line for each hook or rule of the audited settings that
    never decided anything."""
    from ..audit.coverage import flagged, of_meta

    coverage = of_meta(records, meta)
    quiet = flagged(coverage)
    if quiet:
        terminalreporter.write_line("")
        terminalreporter.write_line(f"policy coverage: {len(quiet)} hook(s) or rule(s) never decided an item:")
    for line in quiet:
        terminalreporter.write_line(f"  {line}")
    return coverage


def _shown(path: Path) -> str:
    """A path as the user can type it from where they started."""
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else str(path)


def _after_quick(config: pytest.Config, reports: list[Any]) -> list[str]:
    """What the full audit adds, about how long it takes (each route class at the pace this run played it), and how
    to shard it in CI."""
    played = audit_cases(config)
    full = full_cases(config)
    classes = {c.id: c.route_class for c in played}
    seconds: dict[str, list[float]] = {}
    for report in reports:
        case = getattr(report, "nodeid", "").rpartition("[")[2].rstrip("]")
        if getattr(report, "when", "") == "call" and case in classes:
            seconds.setdefault(classes[case], []).append(report.duration)
    mean = {name: sum(times) / len(times) for name, times in seconds.items()}
    overall = sum(map(sum, seconds.values())) / max(1, sum(map(len, seconds.values())))
    workers = len(getattr(config.option, "tx", None) or []) if config.pluginmanager.has_plugin("dsession") else 1
    estimate = sum(mean.get(c.route_class, overall) for c in full) / workers
    shards = max(2, min(16, math.ceil(estimate / JOB_SECONDS)))
    where = _again(config, full=True)
    about = f", about {math.ceil(estimate / 60)} min on {workers} worker{'s' * (workers > 1)}" if estimate else ""
    return [
        "",
        f"this was the quick audit: {len(played)} items, one plain spelling per route class, as the agent is "
        f"configured. The full audit plays {len(full)} (every spelling, every mode{about}):",
        f"  controlplane audit {where}",
        f"in CI, {shards} jobs of about {math.ceil(len(full) / shards)} items each, then one that joins them:",
        f"  controlplane audit {where} --shard K/{shards} --out shard-K        (K = 1..{shards})",
        "  controlplane audit merge shard-*/audit.json --html audit.html --sarif audit.sarif",
    ]


def _meta(config: pytest.Config, out: Path) -> dict[str, Any]:
    """What the audit files say about the run."""
    from ..agents.settings_hooks import trust_view

    where = directories(config)
    cases = audit_cases(config)
    trust = workspace_trust(config)
    about_cli = cli_about(config)
    return {
        "agent": f"the agent of {', '.join(where)}",
        "directory": ", ".join(where),
        "date": datetime.date.today().isoformat(),
        **about_cli,
        "modes": " ".join(dict.fromkeys(c.mode for c in cases)),
        "targets": "; ".join(dict.fromkeys(_target_line(c) for c in cases)),
        "workspace_trust": trust_view(trust),
        "command": f"controlplane audit {_again(config, out=_shown(out))}",
    }


def _target_line(case: Any) -> str:
    """A case's target line: "write .env"; the everyday tasks' one line, "everyday"."""
    from ..audit.plan import EVERYDAY

    return EVERYDAY if case.family == EVERYDAY else f"{case.family} {case.target}"


def _again(config: pytest.Config, *, full: bool = False, out: str = "") -> str:
    """The directories and options of `controlplane audit` that play this run again, every choice in it (`full`: the
    full audit of the same choice, without --quick, --mode and --shard); pytest's -k and -m after `--`."""
    words = list(directories(config))
    for flag, name in (("--target", "agent_audit_target"), ("--family", "agent_audit_family"),
                       ("--route", "agent_audit_route")):  # fmt: skip
        for value in config.getoption(name) or []:
            words += [flag, value]
    listed = {"--mode": "agent_audit_mode", "--sandbox": "agent_audit_sandbox"}
    for flag, name in listed.items() if not full else [("--sandbox", "agent_audit_sandbox")]:
        values = [v.strip() for value in config.getoption(name) or [] for v in value.split(",") if v.strip()]
        words += [flag, ",".join(values)] * bool(values)
    words += ["--quick"] * (config.getoption("agent_audit_quick") and not full)
    words += ["--faults"] * bool(config.getoption("agent_audit_faults"))
    shard = config.getoption("agent_audit_shard")
    words += ["--shard", shard] * bool(shard and not full)
    approval = config.getoption("agent_approval")
    words += ["--approval", approval] * bool(approval)
    words += ["--workspace-trust", "clone"] * (workspace_trust(config) == "clone")
    clis, chosen = cli_about(config).get("clis"), chosen_cli(config)
    if clis or chosen is not None:
        words += ["--cli", ",".join(clis.values()) if clis else chosen.choice]
    words += ["--cold"] * (config.getini("agent_warm") is False) + ["--out", out] * bool(out)
    pytest_args = [["-k", config.option.keyword]] * bool(config.option.keyword)
    pytest_args += [["-m", config.option.markexpr]] * bool(config.option.markexpr)
    passed = ["--", *(word for pair in pytest_args for word in pair)] if pytest_args else []
    return shlex.join([*words, *passed])
