"""`crash_everywhere` on a plain ClaudeAgent (the docs' own example), run again and again: does it pass every time?

    python bench/crash_claude.py [runs]          # 20 by default

Each run is a fresh pytest process on the docs' example (docs/how-to/crash-resume.md): the real bundled Claude
Code CLI, the scripted model, every crash point killed and resumed.  Prints each run's outcome and seconds, then
"K of N runs passed".  A failure prints the lines that say why.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFTEST = """
import pytest
from claude_agent_sdk import ClaudeAgentOptions
from pytest_controlplane import ClaudeAgent


@pytest.fixture
def agent():
    return ClaudeAgent(lambda workspace: ClaudeAgentOptions())
"""

TEST = """
from pytest_controlplane import text, tool_use


def test_every_crash_point_resumes_to_one_history(agent_session):
    report = agent_session.crash_everywhere(
        "Do the work.",
        script=[tool_use("Write", {"file_path": "a.txt", "content": "a"}),
                tool_use("Bash", {"command": "echo hi >> log.txt"}), tool_use("Read", {"file_path": "a.txt"}),
                text("done")])
    print(report)
    report.assert_consistent()
"""


def run_once(folder: Path) -> tuple[bool, float, str]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(folder)],
        capture_output=True,
        text=True,
        cwd=folder,
    )
    seconds = time.monotonic() - started
    why = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith(("E ", "FAILED", "ERROR"))]
    return done.returncode == 0, seconds, "\n".join(why[:8])


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    passed = 0
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        (folder / "conftest.py").write_text(CONFTEST)
        (folder / "test_crash_docs_example.py").write_text(TEST)
        for number in range(1, runs + 1):
            ok, seconds, why = run_once(folder)
            passed += ok
            print(f"run {number}: {'passed' if ok else 'FAILED'} in {seconds:.0f} s", flush=True)
            if not ok:
                print("   " + why.replace("\n", "\n   "), flush=True)
    print(f"{passed} of {runs} runs passed")


if __name__ == "__main__":
    main()
