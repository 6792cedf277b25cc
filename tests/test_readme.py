"""Every README code block marked as a complete example runs as written.

A block preceded by `<!-- example: python -->` runs as a script; blocks preceded by `<!-- example: pytest -->`
become one pytest project (a `# conftest.py` / `# test_x.py` comment line starts each file) whose tests must
all pass.  Blocks that are fragments (`...`, a name of the reader's own) carry no marker.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).parent.parent / "README.md"
BLOCK = re.compile(r"<!-- example: (\w+) -->\n```python\n(.*?)```", re.S)


def examples(kind: str) -> list[str]:
    return [code for marked, code in BLOCK.findall(README.read_text()) if marked == kind]


def files_of(code: str) -> dict[str, str]:
    """A block cut into files at `# name.py` comment lines."""
    files: dict[str, str] = {}
    name = None
    for line in code.splitlines(keepends=True):
        header = re.fullmatch(r"# (\w+\.py)\n", line)
        if header:
            name = header.group(1)
            files[name] = ""
        elif name is None:
            raise AssertionError(f"a pytest example must start with a `# file.py` line:\n{code}")
        else:
            files[name] += line
    return files


def test_the_readme_has_complete_examples_of_both_kinds():
    assert len(examples("python")) >= 1 and len(examples("pytest")) >= 1
    assert set(re.findall(r"<!-- example: (\w+) -->", README.read_text())) <= {"python", "pytest"}


@pytest.mark.parametrize("code", examples("python"), ids=lambda code: code.splitlines()[-1][:40])
def test_a_python_example_runs(tmp_path, code):
    (tmp_path / "example.py").write_text(code)
    result = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_the_pytest_examples_pass(pytester):
    tests = 0
    for code in examples("pytest"):
        for name, content in files_of(code).items():
            assert not (pytester.path / name).exists(), f"two README examples write {name}"
            (pytester.path / name).write_text(content)
            tests += content.count("\ndef test_")
    result = pytester.runpytest()
    result.assert_outcomes(passed=tests)
