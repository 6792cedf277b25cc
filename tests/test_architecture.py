"""The walls between the layers (docs/explanation/architecture.md) are import-linter contracts: they hold for the package as
it is, and each breaks when a module crosses it (checked in a copy of the package, edited)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(tmp_path: Path, module: str = "", line: str = "") -> subprocess.CompletedProcess[str]:
    copy = tmp_path / "src" / "pytest_controlplane"
    shutil.copytree(ROOT / "src" / "pytest_controlplane", copy, ignore=shutil.ignore_patterns("__pycache__"))
    if module:
        edited = copy / module
        edited.write_text(edited.read_text() + f"\n{line}\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return subprocess.run([str(LINT_IMPORTS), "--config", str(tmp_path / "pyproject.toml"), "--no-cache"],
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path / "src")},
                          capture_output=True, text=True, timeout=120)


def test_the_package_keeps_every_wall(tmp_path):
    result = _lint_imports(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 6 kept, 0 broken." in result.stdout


@pytest.mark.parametrize(("module", "line", "contract"), [
    ("gateway/server.py", "import pytest_controlplane.agents.world",
     "The gateway never imports the agents, the orchestration or the oracles"),
    ("gateway/backends.py", "from pytest_controlplane import crash",
     "The gateway never imports the agents, the orchestration or the oracles"),
    ("effects/diff.py", "from pytest_controlplane.gateway import server", "The oracles never import the gateway"),
    ("canary/scan.py", "import pytest", "The core never imports the pytest plugin or pytest"),
    ("session.py", "from pytest_controlplane import plugin", "The core never imports the pytest plugin or pytest"),
    ("cassette/store.py", "from pytest_controlplane.gateway import templating",
     "The cassettes never import the gateway (no cycle)"),
    ("history/check.py", "from pytest_controlplane import crash",
     "The layers of the Architecture diagram, top to bottom"),
    ("agents/world.py", "from pytest_controlplane import session",
     "The layers of the Architecture diagram, top to bottom"),
    ("plugin/ci.py", "from pytest_controlplane.plugin import audit",
     "The pytest wiring's modules import each other in no loop"),
    ("wire.py", "from pytest_controlplane.cassette import keys",
     "The layers of the Architecture diagram, top to bottom"),
])
def test_crossing_a_wall_breaks_its_contract(tmp_path, module, line, contract):
    result = _lint_imports(tmp_path, module, line)
    assert result.returncode != 0
    broken = [text for text in result.stdout.splitlines() if text.endswith(" BROKEN")]
    assert [text for text in broken if text.startswith(contract)], result.stdout
    assert ", 0 broken." not in result.stdout
