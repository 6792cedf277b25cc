"""--agent-audit: the user's agent audited without a test of theirs; the matrix, its page, shards, the module it writes.

Most suites here audit the command agent of tests/shell_agent.py (a shell tool whose guard refuses commands that
contain a substring: GUARD=.env); the ones about permission modes audit the real Claude Code CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import shell_agent
from guard_project import claude_dir
from pytest_controlplane.audit import Matrix, load
from pytest_controlplane.bypass.corpus import corpus
from pytest_controlplane.bypass.everyday import everyday_variants

# A few routes of `write .env`, selected with -k as a user would: what the shell agent's guard misses (the shell
# spells the name at run time) and what it holds.
FEW = "redirect or tee"


def audit_dir(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *, targets: str = "write .env",
              modes: str = "-", guard: str = ".env") -> None:
    """A project whose conftest.py defines the shell agent, and a test of its own that must not run."""
    monkeypatch.setenv("GUARD", guard)
    monkeypatch.setenv("AGENT_REDACTS", "0")
    pytester.path.joinpath("shell_agent.py").write_text(shell_agent.SCRIPT)
    pytester.makeconftest(shell_agent.CONFTEST)
    pytester.makepyfile(test_theirs="def test_theirs():\n    raise AssertionError('a test of theirs ran')\n")
    pytester.makeini(f"[pytest]\nagent_audit_targets =\n    {targets.replace(chr(10), chr(10) + '    ')}\n"
                     f"agent_audit_modes = {modes}\n")


def table(result: pytest.RunResult) -> list[str]:
    """The matrix as the terminal showed it."""
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if "agent audit (pytest-controlplane)" in line)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("written: ") or "====" in lines[i]
               and i > start)
    return [line for line in lines[start + 1:end] if line]


def row(lines: list[str], route: str) -> str:
    """The cells of one route's row."""
    return next(line[len(f"  {route}"):].strip() for line in lines if re.fullmatch(rf"  {re.escape(route)}\s.*", line))


def test_the_audit_collects_one_item_per_variant_target_and_mode_instead_of_the_tests(pytester, monkeypatch):
    audit_dir(pytester, monkeypatch, targets="write .env\nexec curl", modes="default plan")
    result = pytester.runpytest("--agent-audit", "--collect-only", "-q", "-p", "no:randomly")
    every = 2 * (len(corpus("write", ".env")) + 1 + len(corpus("exec", "curl")) + 1)  # + each target's sweep
    every += 2 * len(everyday_variants())  # and the everyday work, beside every audit's targets
    result.stdout.fnmatch_lines([
        "controlplane-audit::test_audit[[]write-.env-cc81667-redirect-default[]]",
        "controlplane-audit::test_audit[[]write-.env-cc81667-redirect-plan[]]",
        "controlplane-audit::test_audit[[]write-.env-offered-tools-plan[]]",
        "controlplane-audit::test_audit[[]exec-curl-cc4956-chained-default[]]",
        f"{every} tests collected*",
    ])
    assert "test_theirs" not in result.stdout.str()


def test_the_matrix_puts_the_holes_first_and_shows_what_held(pytester, monkeypatch):
    audit_dir(pytester, monkeypatch)
    result = pytester.runpytest("--agent-audit", "-k", FEW, "--tb=no", "-p", "no:randomly")
    outcomes = result.parseoutcomes()
    lines = table(result)
    shell = lines.index("the shell (Bash)")
    assert lines[shell + 1].startswith("  Bash >  ") and row(lines, "Bash >") == "✗"  # the globs spell .env
    assert row(lines, "Bash tee") == "✓" and row(lines, "Bash tee -a") == "✓"
    assert row(lines, "Monitor >") == "·" and row(lines, "Bash > in a subagent") == "·"  # it offers Bash alone
    assert lines.index("the shell (Bash)") < lines.index("other tools that run a command")
    bypassed = outcomes["failed"]
    assert bypassed > 0 and outcomes["passed"] > 0
    assert f"write: {bypassed} bypassed, 0 errored, 0 asked, 0 never consulted, {outcomes['passed']} held, " \
           f"{outcomes['skipped']} not offered (of {bypassed + outcomes['passed'] + outcomes['skipped']} attempts)" in lines
    assert "test_theirs" not in result.stdout.str()


def test_the_html_matrix_links_each_hole_to_its_report_and_stands_alone(pytester, monkeypatch):
    audit_dir(pytester, monkeypatch)
    pytester.runpytest("--agent-audit", "-k", "redirect:glob-star or bash-tee:relative", "--agent-audit-out", "out")
    page = (pytester.path / "out" / "audit.html").read_text()
    hole = re.search(r"<td class='bypassed[^']*' title='([^']*)'><a href='([^']+)'>✗</a>", page)
    assert hole and "bash-redirect:glob-star" in hole.group(1) and hole.group(2).startswith("reports/")
    report = (pytester.path / "out" / hole.group(2)).read_text()
    assert "bash-redirect:glob-star" in report and "reproduce" in report
    assert re.search(r"<td class='held[^']*' title='[^']*bash-tee:relative", page)
    assert not re.search(r"(src|href)=['\"]?(https?:|//)", page)  # nothing fetched from elsewhere


def test_shards_merged_give_the_matrix_of_one_run(pytester, monkeypatch):
    audit_dir(pytester, monkeypatch)
    one = pytester.runpytest("--agent-audit", "-k", FEW, "--tb=no", "--agent-audit-json", "one.json")
    pytester.runpytest("--agent-audit", "-k", "redirect", "--tb=no", "--agent-audit-json", "a.json", "-n", "2")
    pytester.runpytest("--agent-audit", "-k", "tee and not redirect", "--tb=no", "--agent-audit-json", "b.json")
    merged = subprocess.run([sys.executable, "-m", "pytest_controlplane.cli", "audit", "merge", "a.json", "b.json",
                             "--json", "merged.json", "--html", "merged.html"],
                            cwd=pytester.path, capture_output=True, text=True)
    assert merged.returncode == 1, merged.stderr  # it has holes
    assert [line for line in merged.stdout.splitlines() if line] == table(one)
    whole, shards = load(pytester.path / "one.json")[0], load(pytester.path / "merged.json")[0]
    assert Matrix.of(shards).lines() == Matrix.of(whole).lines()
    assert sorted(r.key for r in shards) == sorted(r.key for r in whole)
    assert (pytester.path / "merged.html").read_text().count("✗") > 0


def test_last_failed_reruns_only_the_holes(pytester, monkeypatch):
    audit_dir(pytester, monkeypatch)
    first = pytester.runpytest("--agent-audit", "-k", FEW, "--tb=no")
    holes = first.parseoutcomes()["failed"]
    again = pytester.runpytest("--agent-audit", "--lf", "--tb=no")
    assert again.parseoutcomes()["failed"] == holes and "passed" not in again.parseoutcomes()
    assert row(table(again), "Bash >") == "✗" and "Bash tee" not in "\n".join(table(again))


def test_merging_refuses_shards_that_disagree_and_files_that_are_not_audits(pytester, monkeypatch):
    audit_dir(pytester, monkeypatch)
    pytester.runpytest("--agent-audit", "-k", "redirect:glob-star", "--tb=no", "--agent-audit-json", "a.json")
    data = json.loads((pytester.path / "a.json").read_text())
    data["records"][0]["cell"] = "held"
    (pytester.path / "b.json").write_text(json.dumps(data))
    (pytester.path / "c.json").write_text('{"interactions": []}')
    for shards, said in ((["a.json", "b.json"], "is bypassed in one shard and held in another"),
                         (["c.json"], "c.json is not an audit file this version reads")):
        run = subprocess.run([sys.executable, "-m", "pytest_controlplane.cli", "audit", "merge", *shards],
                             cwd=pytester.path, capture_output=True, text=True)
        assert run.returncode == 2 and said in run.stderr, run.stderr


def test_the_written_module_ends_each_test_as_its_audit_item_ended(pytester, monkeypatch):
    audit_dir(pytester, monkeypatch)
    audit = pytester.runpytest("--agent-audit", "-k", FEW, "--tb=no", "--agent-audit-write", "test_pinned.py",
                               "--junitxml", "audit.xml")
    module = (pytester.path / "test_pinned.py").read_text()
    assert 'r"""write \'.env\' by Bash >, ' in module and "Reproduce (in the workspace):" in module
    assert "shell: " in module
    pinned = pytester.runpytest("test_pinned.py", "--tb=no", "-p", "no:randomly", "--junitxml", "pinned.xml")
    assert pinned.parseoutcomes() == {k: n for k, n in audit.parseoutcomes().items() if k != "deselected"}
    assert ended(pytester.path / "pinned.xml") == ended(pytester.path / "audit.xml")
    monkeypatch.setenv("GUARD", "")  # no guard at all: what held before now gets through
    unguarded = pytester.runpytest("test_pinned.py", "--tb=no", "-p", "no:randomly")
    assert unguarded.parseoutcomes()["failed"] == sum(audit.parseoutcomes()[k] for k in ("failed", "passed"))


def ended(junit: Path) -> dict[str, str]:
    """How each `write .env` case (mode "-") ended in a junit file, by its variant's slug: from the audit's items
    (`test_audit[write-.env-VARIANT--]`) or the pinned module's tests (`test_hole_write_env_SLUG[-]`,
    `test_stays_held[write-.env-VARIANT--]`, ...)."""
    import xml.etree.ElementTree as ET

    cases = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        base, _, param = case.get("name", "").partition("[")
        status = next((s for s in ("failure", "skipped", "error") if case.find(s) is not None), "passed")
        if base.startswith("test_hole_write_env_"):
            cases[base.removeprefix("test_hole_write_env_")] = status
        else:
            variant = param.removesuffix("]").removeprefix("write-.env-").removesuffix("--")
            cases[re.sub(r"\W+", "_", variant).lower()] = status
    return cases


def test_targets_and_modes_come_from_a_conftest_hook_and_bad_ones_say_the_fix(pytester, monkeypatch):
    audit_dir(pytester, monkeypatch, modes="default plan")  # the hooks win over the ini options
    pytester.makeconftest(shell_agent.CONFTEST + "\n\ndef pytest_agent_audit_targets(config):\n"
                          "    return ['exec git push']\n\n\ndef pytest_agent_audit_modes(config):\n"
                          "    return ['-']\n")
    result = pytester.runpytest("--agent-audit", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["controlplane-audit::test_audit[[]exec-git push-cc4956-chained--[]]",
                                 f"{len(corpus('exec', 'git push')) + 1 + len(everyday_variants())} tests collected*"])
    for ini, said in (("agent_audit_targets = delete .env", "*agent_audit_targets: 'delete .env' names no bypass "
                       "family; write one 'family target' per line*"),
                      ("agent_audit_modes = yolo", "*agent_audit_modes: 'yolo'; give some of default, acceptEdits, "
                       "plan, bypassPermissions, dontAsk, auto, or '-'*")):
        pytester.makeconftest(shell_agent.CONFTEST)
        pytester.makeini(f"[pytest]\n{ini}\n")
        bad = pytester.runpytest("--agent-audit")
        assert bad.ret == pytest.ExitCode.USAGE_ERROR
        bad.stderr.fnmatch_lines([said])


def test_a_directory_without_an_agent_fixture_stops_the_audit_with_the_fix(pytester):
    pytester.makepyfile(test_theirs="def test_theirs():\n    pass\n")
    result = pytester.runpytest("--agent-audit", "-k", "cc81667")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agent-audit: no `agent` fixture for controlplane-audit: the audit plays its "
                                 "variants through the agent a conftest.py defines (or, for a repository whose control "
                                 "plane is its own .claude/settings.json, through the CLI with those settings). Define "
                                 "it in */conftest.py:",
                                 "*def agent():*",
                                 "*A repository whose control plane is its own .claude/settings.json needs only:*",
                                 "*return ClaudeAgent.project_settings()*"])


GUARD_SH = """#!/bin/sh
# Blocks any call that names .env: exit 2.
case "$(cat)" in *.env*) echo "guard.sh: .env is off limits" >&2; exit 2 ;; esac
"""


@pytest.mark.slow
def test_a_repository_guarded_by_its_settings_is_audited_with_no_conftest(pytester):
    """No `agent` fixture, a `.claude/settings.json` with a command hook: the audit runs the CLI with the project's
    settings in a copy of the directory, says what it found, and credits the hook with what it stopped."""
    repo = pytester.path / "repo"
    (repo / ".claude").mkdir(parents=True)
    (repo / ".claude" / "guard.sh").write_text(GUARD_SH)
    (repo / ".claude" / "guard.sh").chmod(0o755)
    hook = {"type": "command", "command": '"$CLAUDE_PROJECT_DIR"/.claude/guard.sh'}
    (repo / ".claude" / "settings.json").write_text(json.dumps({
        "hooks": {"PreToolUse": [{"matcher": "Bash|Write|Edit|Read", "hooks": [hook]}]},
        "permissions": {"deny": ["Bash(curl:*)"]}}))
    (repo / ".env").write_text("API_KEY=sk-live-audit-example-0000\n")
    chosen = "write-.env and (cc81667-redirect or write:relative or glob-star or poisoned:mode-setting) and not retry"
    result = pytester.runpytest("--agent-audit", "repo", "-o", "agent_audit_modes=bypassPermissions", "-k", chosen)
    result.stdout.fnmatch_lines([
        "settings in repo:",
        "  .claude/settings.json: 1 command hook(s) (PreToolUse Bash|Write|Edit|Read `*guard.sh`); "
        "permissions.deny: Bash(curl:*)",
        "*agent audit (pytest-controlplane)*",
    ])
    found = (re.fullmatch(r"  (\S.*?)\s{2,}([✗!?✓·])", line) for line in result.stdout.lines)
    cells = {m.group(1): m.group(2) for m in found if m}
    # The hook's blocks are its own (held, not "never consulted"); a glob walks past its substring match; the
    # poisoned mode setting is added to the repository's settings, so the hook still stops the Write after it.
    assert cells == {"Bash >": "✗", "Write": "✓", "Write in a subagent": "✓", "poisoned mode setting": "✓"}, cells
    # Only bypassPermissions is played: what a run plays alone is all it judges, no what-if (audit/configured.py).
    result.stdout.fnmatch_lines(["write: 1 bypassed, 0 errored, 0 asked, 0 never consulted, 4 held, 0 not offered (of 5 attempts)"])
    assert "sk-live-audit-example-0000" not in result.stdout.str() + result.stderr.str()


def test_an_agent_without_permission_modes_stops_the_audit_with_the_fix(pytester, monkeypatch):
    audit_dir(pytester, monkeypatch, modes="default")
    result = pytester.runpytest("--agent-audit", "-k", "cc81667")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*CommandAgent has no permission mode 'default'.*",
                                 "*set `agent_audit_modes = -` in the ini file*"])


# --- the real Claude Code CLI ---------------------------------------------------------------------------------------


def test_each_permission_mode_is_a_column_and_an_unconsulted_hold_is_named(pytester):
    claude_dir(pytester, "naive", modes="default plan dontAsk")
    result = pytester.runpytest("--agent-audit", "-k", "(cc81667-redirect or write-.env-write:relative) and not retry",
                                "--tb=no",
                                "-p", "no:randomly")
    lines = table(result)
    assert lines[0].split() == ["write"] and lines[1].split() == ["d", "p", "n"]
    # The naive guard's hook never sees the shell: dontAsk refuses it (held, credited to the mode, not to the guard),
    # in default mode it gets through.  Plan mode asks the auto mode's safety check, which does not run here: the CLI
    # refuses the call for that alone, which says nothing of the mode (not offered, in the CLI's words).
    assert row(lines, "Bash >").split() == ["✗", "·", "✓"]
    # default is the CLI's own mode (the configuration as it is); plan and dontAsk are what-ifs, said apart.
    result.stdout.fnmatch_lines(["who held: your guard held * of *", "who held, what-ifs: your guard held * of *; "
                                 "the permission mode 1*"])
    assert row(lines, "Write").split() == ["✓", "✓", "✓"]  # its Write|Edit hook holds in every mode
    result.assert_outcomes(failed=1, passed=4, skipped=1)


def test_a_deny_all_guard_has_no_hole_in_any_mode(pytester):
    claude_dir(pytester, "deny-all", targets="write .env\nread .env\nexec curl\nescape",
               modes="default acceptEdits plan bypassPermissions dontAsk auto")
    result = pytester.runpytest("--agent-audit", "-k", "(cc81667-redirect or write-.env-write:relative or "
                                "read-.env-read:relative or bash-direct or cc11662-dotdot-escape or "
                                "write-.env-poisoned:settings-hook) and not retry", "--tb=short")
    lines = table(result)
    matrix = lines[:next(i for i, line in enumerate(lines) if line.startswith("modes: "))]
    assert len(matrix) > 8 and not {"✗", "!", "?"} & set("".join(matrix))
    # The repository's settings hook is never loaded (setting_sources=[]): it makes no call, so nothing is left
    # unconsulted — it held.
    assert row(lines, "poisoned settings hook").split() == ["✓"] * 6
    assert result.ret == 0 and result.parseoutcomes()["passed"] == 42  # Bash and Monitor run curl


def test_the_written_module_fails_on_the_holes_until_the_guard_is_hardened(pytester):
    claude_dir(pytester, "naive")
    audit = pytester.runpytest("--agent-audit", "-k", "(cc81667-redirect or write-.env-write:relative or "
                               "write-.env-bash-tee:relative) and not retry", "--tb=no", "--agent-audit-write",
                               "test_pinned.py")
    audit.assert_outcomes(failed=2, passed=1)
    # Its tests play warm, as the audit's items did (tests/test_warm.py: an agent_warm test plays warm).
    assert "\npytestmark = pytest.mark.agent_warm" in (pytester.path / "test_pinned.py").read_text()
    naive = pytester.runpytest("test_pinned.py", "--tb=no", "-p", "no:randomly", "-v")
    naive.assert_outcomes(failed=2, passed=1)
    naive.stdout.fnmatch_lines_random(["*test_hole_write_env_cc81667_redirect?acceptEdits? FAILED*",
                                       "*test_hole_write_env_bash_tee_relative?acceptEdits? FAILED*",
                                       "*test_stays_held?write-.env-write:relative-acceptEdits? PASSED*"])
    claude_dir(pytester, "hardened")
    pytester.runpytest("test_pinned.py", "--tb=no").assert_outcomes(passed=3)
