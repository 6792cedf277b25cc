"""`controlplane cassettes check|stats|prune`: exit codes and --json for CI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parent.parent
GOOD = REPO / "cassettes" / "examples" / "claude_guard" / "test_guard" / "test_ordinary_note_is_written.yaml"


def controlplane(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_controlplane.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_check_passes_the_repo_cassettes_and_finds_what_is_wrong_in_bad_ones(tmp_path):
    assert controlplane("cassettes", "check", str(REPO / "cassettes"), cwd=tmp_path).returncode == 0
    tapes = tmp_path / "cassettes"
    tapes.mkdir()
    shutil.copy(GOOD, tapes / "good.yaml")
    text = GOOD.read_text()
    (tapes / "leaky.yaml").write_text(text.replace("claude_cli_version: 2.1.332", "claude_cli_version: 2.1.300")
                                      .replace("      Accept:\n", "      x-api-key:\n      - sk-ant-api03-" + "A" * 40
                                               + "\n      Accept:\n", 1))
    (tapes / "torn.yaml").write_text(text[:len(text) // 3])
    done = controlplane("cassettes", "check", "--json", str(tapes), cwd=tmp_path)
    assert done.returncode == 1
    findings = {(Path(f["file"]).name, f["problem"]) for f in json.loads(done.stdout)["findings"]}
    assert findings == {("leaky.yaml", "unscrubbed request header"), ("leaky.yaml", "secret-looking value"),
                        ("torn.yaml", "does not load"), ("*", "mixed Claude Code CLI versions")}
    plain = controlplane("cassettes", "check", str(tapes), cwd=tmp_path)
    assert "secret-looking value: line " in plain.stdout and "sk-ant-api03-AAAA" not in plain.stdout
    assert plain.stdout.strip().endswith("3 cassette(s) checked, 4 finding(s)")


def test_stats_counts_interactions_models_and_versions(tmp_path):
    done = controlplane("cassettes", "stats", "--json", str(REPO / "cassettes"), cwd=tmp_path)
    numbers = json.loads(done.stdout)
    assert done.returncode == 0 and numbers["files"] >= 10 and numbers["interactions"] >= numbers["files"]
    assert numbers["cli_versions"]["2.1.332"] >= 1
    assert all("not Claude" in source for source in numbers["sources"])  # every cassette here says what made it


def test_prune_lists_cassettes_no_test_uses_and_deletes_them_with_yes(tmp_path):
    (tmp_path / "test_notes.py").write_text("def test_kept():\n    pass\n")
    kept = tmp_path / "cassettes" / "test_notes" / "test_kept.yaml"
    orphan = tmp_path / "cassettes" / "test_notes" / "test_renamed_long_ago.yaml"
    kept.parent.mkdir(parents=True)
    shutil.copy(GOOD, kept)
    shutil.copy(GOOD, orphan)
    listed = controlplane("cassettes", "prune", "cassettes", "--tests", "test_notes.py", cwd=tmp_path)
    assert listed.returncode == 1 and f"unused: cassettes/test_notes/{orphan.name}" in listed.stdout
    assert orphan.exists()
    pruned = controlplane("cassettes", "prune", "cassettes", "--tests", "test_notes.py", "--yes", cwd=tmp_path)
    assert pruned.returncode == 0 and not orphan.exists() and kept.exists()


def test_a_missing_directory_is_a_usage_error(tmp_path):
    done = controlplane("cassettes", "check", "nowhere", cwd=tmp_path)
    assert done.returncode == 2 and "no such file or directory: nowhere" in done.stderr


def test_the_run_summary_names_the_cassettes_no_test_played(tmp_path):
    """After a whole-suite run: the cassette files in the cassette dir that no test played, spelled from the root;
    nothing when every one was played, or when the run played none of them (a run of scripted tests only)."""
    from pytest_controlplane.report.terminal import unused_lines

    played, orphan = tmp_path / "cassettes" / "t" / "a.yaml", tmp_path / "cassettes" / "t" / "b.yaml"
    played.parent.mkdir(parents=True)
    played.write_text("")
    orphan.write_text("")
    directory = tmp_path / "cassettes"
    assert unused_lines(directory, {str(played)}, tmp_path) == [
        f"1 cassette file(s) no test of this run used: cassettes/t/b.yaml; if the whole suite ran, "
        f"`controlplane cassettes prune {directory}` lists them and `--yes` deletes them"]
    assert unused_lines(directory, {str(played), str(orphan)}, tmp_path) == []
    assert unused_lines(directory, set(), tmp_path) == []

