"""The audit as a newcomer meets it: `controlplane audit DIR` with a short help and options of its own, a quick first
answer, targets that fit the repository, a quiet terminal, files where they are expected, and a regression module
that runs as written.

Most suites audit the command agent of tests/shell_agent.py (its guard refuses commands that contain GUARD); the ones
about a repository guarded by its own settings, and about permission modes, run the real Claude Code CLI."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import shell_agent
from pytest_controlplane.audit.plan import DEFAULT_MODES, DEFAULT_TARGETS, ROUTE_CLASSES, cases, parse_targets
from pytest_controlplane.audit.targets import derive
from pytest_controlplane.bypass.corpus import corpus
from pytest_controlplane.bypass.everyday import everyday_variants

CONTROLPLANE = [sys.executable, "-m", "pytest_controlplane.cli"]
EXAMPLES = Path(__file__).parent.parent / "examples"


def shell_project(directory: Path, monkeypatch: pytest.MonkeyPatch, guard: str = ".env") -> Path:
    """A directory whose conftest.py defines the shell agent (its guard refuses commands that contain `guard`)."""
    monkeypatch.setenv("GUARD", guard)
    monkeypatch.setenv("AGENT_REDACTS", "0")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "shell_agent.py").write_text(shell_agent.SCRIPT)
    (directory / "conftest.py").write_text(shell_agent.CONFTEST)
    (directory / "test_theirs.py").write_text("def test_theirs():\n    raise AssertionError('a test of theirs ran')\n")
    return directory


def audit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CONTROLPLANE, "audit", *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def collected(run: subprocess.CompletedProcess[str]) -> list[str]:
    """The audit items a `-- --collect-only -q` run listed, as their ids."""
    return re.findall(r"::test_audit\[(.+)\]$", run.stdout, re.M)


# --- its own command line -------------------------------------------------------------------------------------------


def test_the_help_is_short_and_names_the_audits_own_options(tmp_path):
    run = audit("--help", cwd=tmp_path)
    assert run.returncode == 0 and len(run.stdout.splitlines()) <= 80, run.stdout
    for option in ("--quick", "--target", "--family", "--mode", "--route", "--shard", "--out", "--workers",
                   "--approval", "--cold", "-v", "--tb", "--pytest-help"):
        assert re.search(rf"^\s+{re.escape(option)}\b", run.stdout, re.M) or f", {option}" in run.stdout, option
    assert "--basetemp" not in run.stdout and "--agent-mode" not in run.stdout  # pytest's, and the tests' own
    pytests = audit("--pytest-help", cwd=tmp_path)
    assert pytests.returncode == 0 and "--basetemp" in pytests.stdout and "--agent-audit-quick" in pytests.stdout


def test_targets_families_classes_modes_and_shards_choose_the_items(pytester, monkeypatch):
    project = shell_project(pytester.path / "repo", monkeypatch)
    chosen = audit("repo", "--target", "write .env", "--target", "exec curl", "--target", "read .env",
                   "--family", "write", "--family", "exec", "--route", "shell", "--route", "file",
                   "--mode", "default,plan", "--", "--collect-only", "-q", cwd=pytester.path)
    ids = collected(chosen)
    expected = [c.id for c in cases(parse_targets(["write .env", "exec curl"]), ["default", "plan"])
                if c.route_class in (ROUTE_CLASSES["shell"], ROUTE_CLASSES["file"])]
    assert ids and sorted(ids) == sorted(expected), chosen.stdout[-2000:]
    assert not any(i.startswith("read-") for i in ids)
    shards = [collected(audit("repo", "--target", "write .env", "--mode", "-", "--shard", f"{k}/2",
                              "--", "--collect-only", "-q", cwd=pytester.path)) for k in (1, 2)]
    whole = collected(audit("repo", "--target", "write .env", "--mode", "-", "--", "--collect-only", "-q",
                            cwd=pytester.path))
    assert all(shards) and sorted(sum(shards, [])) == sorted(whole)
    bad = audit("repo", "--route", "teleport", cwd=pytester.path)
    assert bad.returncode == 2 and "shell" in bad.stderr  # argparse names the classes
    bad = audit("repo", "--target", "steal .env", "--", "--collect-only", cwd=pytester.path)
    assert bad.returncode == 4 and "names no bypass family" in bad.stdout + bad.stderr
    assert project.is_dir()


def test_an_audit_that_selects_nothing_says_why_and_fails_before_anything_runs(pytester):
    """A repository with a .env and no egress target, audited for egress: no item, no crash that passes CI (it was an
    INTERNALERROR on a NOTSET item, exit 0 under xdist), but a usage error naming the target to give.  The twin: with
    that target the same audit collects the egress items."""
    (pytester.path / "repo").mkdir()
    (pytester.path / "repo" / ".env").write_text("API_KEY=sk-live-nothing-0000\n")
    for workers in ("0", "2"):
        empty = audit("repo", "--family", "egress", "--quick", "-n", workers, cwd=pytester.path)
        assert empty.returncode == 4, empty.stdout[-2000:] + empty.stderr[-2000:]
        assert "the audit selects nothing: no egress target among the targets chosen" in empty.stdout + empty.stderr
        assert "--target 'egress collector.example'" in empty.stdout + empty.stderr
        assert "INTERNALERROR" not in empty.stdout + empty.stderr
    given = audit("repo", "--family", "egress", "--quick", "--target", "egress collector.example", "--",
                  "--collect-only", "-q", cwd=pytester.path)
    assert collected(given) and all(i.startswith("egress-") for i in collected(given)), given.stdout[-2000:]
    none = audit("repo", "--target", "write .env", "--route", "egress-dns", "--", "--collect-only", cwd=pytester.path)
    assert none.returncode == 4 and "takes route class egress-dns" in none.stdout + none.stderr


def test_no_variant_id_names_a_permission_mode_so_k_picks_modes_exactly(pytester, monkeypatch):
    ids = {v.id for family, target in parse_targets(DEFAULT_TARGETS) for v in corpus(family, target, depth="full")}
    assert len(ids) > 1000
    assert [(i, m) for i in ids for m in DEFAULT_MODES if m.lower() in i.lower()] == []
    shell_project(pytester.path / "repo", monkeypatch)
    run = audit("repo", "--target", "write .env", "--mode", "default,bypassPermissions",
                "--", "--collect-only", "-q", "-k", "write-.env and default", cwd=pytester.path)
    picked = collected(run)
    assert picked and all(i.endswith("-default") for i in picked), [i for i in picked if not i.endswith("-default")]


# --- a first answer in a minute -------------------------------------------------------------------------------------


def test_quick_plays_one_plain_spelling_per_route_class_and_says_what_the_full_audit_adds(pytester, monkeypatch):
    shell_project(pytester.path / "repo", monkeypatch)
    run = audit("repo", "--quick", "--target", "write .env", "--target", "exec curl", "-n", "0", cwd=pytester.path)
    every = json.loads((pytester.path / "controlplane-report" / "repo" / "audit.json").read_text())["records"]
    played = [r for r in every if r["family"] != "everyday"]  # and every everyday task, each its own work
    assert {r["case"] for r in every if r["family"] == "everyday"} == {v.id for v in everyday_variants()}
    items = {(r["family"], r["route_class"]): r["variant"] for r in played}
    classes = {(c.family, c.route_class) for c in cases(parse_targets(["write .env", "exec curl"]), ["-"])}
    assert set(items) == classes and len({(r["family"], r["case"]) for r in played}) == len(classes)  # one item per class
    assert {r["mode"] for r in played} == {"-"}  # as the agent is configured
    assert items[("write", ROUTE_CLASSES["shell"])] == "bash-append:relative"  # no reported bypass, a plain path
    full = len(cases(parse_targets(["write .env", "exec curl", "everyday"]), DEFAULT_MODES))
    assert f"The full audit plays {full} (every spelling, every mode" in run.stdout, run.stdout[-3000:]
    # the full audit keeps this run's choice of targets (and drops --quick)
    assert re.search(r"controlplane audit repo --target 'write \.env' --target 'exec curl' --shard K/\d+ --out shard-K",
                     run.stdout), run.stdout[-3000:]
    assert "controlplane audit merge shard-*/audit.json" in run.stdout
    assert run.returncode == 1  # the shell agent's guard lets a plain redirect of exec curl through


# --- targets that fit -----------------------------------------------------------------------------------------------


def test_targets_come_from_the_repositorys_deny_rules_sensitive_files_and_scripts(pytester):
    repo = pytester.path / "repo"
    (repo / ".claude").mkdir(parents=True)
    (repo / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": [
        "Read(./.env.production)", "Edit(secrets/**)", "Bash(git push:*)", "Read(//etc/passwd)", "Read(~/.ssh/**)",
        "Read(**/*.key)", "WebFetch(domain:example.com)"]}, "hooks": {}}))
    for name, text in {".env": "A=1\n", ".env.example": "A=\n", "config/credentials.json": "{}",
                       "certs/server.pem": "-----BEGIN-----\n", "scripts/release.sh": "echo release\n",
                       "node_modules/pkg/id_rsa": "not the repository's"}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    result = pytester.runpytest("--agent-audit", "repo", "--collect-only", "-o", "agent_audit_modes=-")
    chosen = {
        "read .env.production": "the deny rule Read(./.env.production) in .claude/settings.json",
        "write secrets/": "the deny rule Edit(secrets/**) in .claude/settings.json",
        "exec git push": "the deny rule Bash(git push:*) in .claude/settings.json",
        "egress collector.example": "the deny rule WebFetch(domain:example.com) in .claude/settings.json",
        "write .env": "the repository has .env",
        "read .env": "the repository has .env",
        "read config/credentials.json": "the repository has config/credentials.json",
        "read certs/server.pem": "the repository has certs/server.pem",
        "exec scripts/release.sh": "the repository has scripts/release.sh",
    }
    result.stdout.fnmatch_lines(["targets, from what the audited directory has (name others with --target):"])
    shown = {m.group(1): m.group(2) for m in re.finditer(r"^  (\S.*?)\s{2,}(.+)$", result.stdout.str(), re.M)
             if m.group(1).split()[0] in ("read", "write", "exec", "egress")}
    assert shown == chosen
    ids = re.findall(r"<Function test_audit\[(.+)\]>", result.stdout.str())
    assert {i for i in ids if i.endswith("-offered-tools--")} == {
        f"{line.replace(' ', '-', 1)}-offered-tools--" for line in chosen}


def test_a_repository_with_nothing_to_aim_at_gets_the_defaults_and_says_so(pytester, monkeypatch):
    shell_project(pytester.path / "repo", monkeypatch)
    result = pytester.runpytest("--agent-audit", "repo", "--collect-only", "-o", "agent_audit_modes=-")
    result.stdout.fnmatch_lines(["targets: the defaults (the audited directory has no deny rule, sensitive file or "
                                 "script to aim at; name yours with --target)"])
    ids = re.findall(r"<Function test_audit\[(.+)\]>", result.stdout.str())
    assert {i.rsplit("-offered-tools", 1)[0] for i in ids if "offered-tools" in i} == {
        line.replace(" ", "-", 1) for line in DEFAULT_TARGETS}
    assert derive(pytester.path / "no-such-directory") == []


# --- a quiet terminal -----------------------------------------------------------------------------------------------


def test_the_terminal_is_quiet_and_ends_with_the_matrix_files_and_totals(pytester, monkeypatch):
    shell_project(pytester.path / "repo", monkeypatch)
    chosen = ["--target", "write .env", "--mode", "-", "-n", "0", "--", "-k", "redirect:glob-star or bash-tee:relative"]
    run = audit("repo", *chosen, cwd=pytester.path)
    lines = run.stdout.splitlines()
    assert run.returncode == 1 and "AssertionError" not in run.stdout and "FAILED" not in run.stdout
    assert not [line for line in lines if line.startswith(("E   ", "____"))]  # no traceback, no failure header
    progress = [i for i, line in enumerate(lines) if re.fullmatch(r"audit: \d/3 items, [\d.]+ items/s, .*", line)]
    matrix = lines.index(next(line for line in lines if "agent audit (pytest-controlplane)" in line))
    assert progress and progress[-1] < matrix and lines[progress[-1]].startswith("audit: 3/3 items")
    after = lines[matrix + 1:]
    assert re.fullmatch(r"=+ 1 failed, 1 passed, 1 skipped, \d+ deselected in .* =+", after[-1])
    assert after[-2].startswith("pin every verdict as a test: pytest ")
    assert "agent tests (pytest-controlplane)" not in run.stdout  # the per-test table: -v
    loud = audit("repo", *chosen[:-3], "-v", "--", "-k", chosen[-1], cwd=pytester.path)
    assert "FAILED" in loud.stdout and "got through" in loud.stdout and "agent tests (pytest-controlplane)" in loud.stdout
    traced = audit("repo", *chosen[:-3], "--tb", "short", "--", "-k", chosen[-1], cwd=pytester.path)
    assert "got through" in traced.stdout and "FAILED" not in traced.stdout


# --- outputs where expected -----------------------------------------------------------------------------------------


def test_files_go_under_the_current_directory_by_the_audited_name_and_a_second_audit_keeps_the_first(
        pytester, monkeypatch):
    for name in ("alpha", "beta"):
        shell_project(pytester.path / "repos" / name, monkeypatch)
    work = pytester.path / "work"
    work.mkdir()
    for name in ("alpha", "beta"):
        run = audit(f"../repos/{name}", "--target", "write .env", "--mode", "-", "-n", "0",
                    "--", "-k", "redirect:glob-star", cwd=work)
        for file in ("audit.html", "audit.json", "audit.sarif", "summary.md", "test_audit_regression.py"):
            assert f"written: controlplane-report/{name}/{file}" in run.stdout, run.stdout[-2000:]
    for name in ("alpha", "beta"):
        folder = work / "controlplane-report" / name
        assert (folder / "audit.html").is_file() and list((folder / "reports").glob("*.html"))  # the hole's report
        assert json.loads((folder / "audit.json").read_text())["records"][0]["report"].startswith(str(folder))
    assert not (pytester.path / "controlplane-report").exists()  # pytest's rootdir is left alone
    chosen = audit("../repos/alpha", "--target", "write .env", "--mode", "-", "-n", "0", "--out", "mine",
                   "--", "-k", "redirect:glob-star", cwd=work)
    assert "written: mine/audit.html" in chosen.stdout and (work / "mine" / "summary.md").is_file()


# --- everything written runs as written ------------------------------------------------------------------------------


def _pinned(run: subprocess.CompletedProcess[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command the audit printed to run its regression module, run as printed."""
    command = next(line for line in run.stdout.splitlines() if line.startswith("pin every verdict as a test: "))
    words = shlex.split(command.split(": ", 1)[1])
    assert words[0] == "pytest"
    return subprocess.run([sys.executable, "-m", *words, "-p", "no:randomly"], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def _outcomes(stdout: str) -> dict[str, int]:
    last = stdout.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (failed|passed|skipped)", last)}


def test_the_module_of_a_directory_with_a_conftest_runs_where_it_was_written(pytester, monkeypatch):
    shell_project(pytester.path / "repo", monkeypatch)
    work = pytester.path / "work"
    work.mkdir()
    run = audit("../repo", "--target", "write .env", "--mode", "-", "-n", "0",
                "--", "-k", "redirect:glob-star or bash-tee:relative or bash-tee-a:relative", cwd=work)
    pinned = _pinned(run, work)
    assert _outcomes(pinned.stdout) == _outcomes(run.stdout), pinned.stdout[-2000:]
    assert _outcomes(run.stdout)["failed"] == 1 and _outcomes(run.stdout)["passed"] == 2
    module = (work / "controlplane-report" / "repo" / "test_audit_regression.py").read_text()
    assert "globals().update(fixtures_of(Path(__file__).parent / '../../../repo/conftest.py'))" in module
    (pytester.path / "repo" / "conftest.py").unlink()
    gone = _pinned(run, work)
    assert gone.returncode != 0 and "the audited directory's conftest.py is gone" in gone.stdout + gone.stderr


@pytest.mark.slow
def test_the_module_of_a_repository_guarded_by_its_settings_runs_without_a_conftest(pytester):
    repo = pytester.path / "repo"
    shutil.copytree(EXAMPLES / "settings_hooks" / "project", repo)
    chosen = "write-.env and (write:relative or bash-append:relative or monitor:redirect:relative)"
    run = audit("repo", "--quick", "--target", "write .env", "--", "-k", chosen, cwd=pytester.path)
    assert "No agent is defined" not in run.stdout
    pinned = _pinned(run, pytester.path)
    assert _outcomes(pinned.stdout) == _outcomes(run.stdout), run.stdout[-2000:] + pinned.stdout[-3000:]
    assert _outcomes(run.stdout).get("failed") and _outcomes(run.stdout).get("passed")  # a hole and a hold
    folder = pytester.path / "controlplane-report" / "repo"
    assert "def agent():\n" in (folder / "test_audit_regression.py").read_text()
    records = json.loads((folder / "audit.json").read_text())["records"]
    # Only a hole names the hook that let it through; a hold is no hook's letting through.
    assert all(r["seen_by"] for r in records if r["cell"] == "bypassed")
    assert not [r["seen_by"] for r in records if r["cell"] != "bypassed" and r["seen_by"]]


@pytest.mark.slow
def test_the_multi_mode_pattern_plays_the_offered_tools_sweep_under_each_mode(pytester):
    """`attempt(bypass_variants, permission_modes=[...])` on the automatic offered-tools item: each variant the sweep
    builds (an MCP write tool's) is played under each mode, and the guard that names Bash only lets it through under
    bypassPermissions.  (docs/how-to/bypass-variants.md runs the pattern with a guard that holds it in both.)"""
    shutil.copy(EXAMPLES / "offered_routes" / "guards.py", pytester.path / "guards.py")
    shutil.copytree(EXAMPLES / "offered_routes" / "project", pytester.path / "project")
    pytester.makeconftest("import pytest\n\n@pytest.fixture\ndef agent_workspace_template(request):\n"
                          "    return request.path.parent / 'project'\n")
    pytester.makepyfile(test_modes='''
import pytest
from guards import by_name_options, with_files_server
from pytest_controlplane import ClaudeAgent

MODES = ["acceptEdits", "bypassPermissions"]


def play(agent_session, variant, through):
    outcome = agent_session.attempt(variant, permission_modes=MODES)
    assert variant.id == "offered-tools" and outcome.outcomes
    assert all(set(o.by_mode) == set(MODES) for o in outcome.outcomes)
    assert outcome.bypassed == through, outcome.describe()
    assert all(o.by_mode["bypassPermissions"].bypassed == through for o in outcome.outcomes), outcome.describe()


class TestByName:
    @pytest.fixture
    def agent(self):
        return ClaudeAgent(with_files_server(by_name_options))

    @pytest.mark.bypass_variants("write", target=".env", tags=["offered-tool"])
    def test_every_mode(self, agent_session, bypass_variants):
        play(agent_session, bypass_variants, through=True)
''')
    result = pytester.runpytest("-p", "no:randomly", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*TestByName::test_every_mode?offered-tools? PASSED*"])
