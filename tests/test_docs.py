"""The documentation: the README is the front door, the site builds, its examples run, and its reference is whole.

- The site (mkdocs.yml, docs/) builds with `mkdocs build --strict`: no broken link or anchor between its pages.
- Every code block marked as a complete example runs as written, in README.md and in docs/.  A block preceded by
  `<!-- example: python -->` runs as a script; the blocks preceded by `<!-- example: pytest -->` on one page become one
  pytest project (a `# conftest.py` / `# test_x.py` comment line starts each file), whose tests must all pass (a bypass
  variant whose route the agent does not offer may skip).  Blocks that are fragments (`...`, a name of the reader's
  own) carry no marker.
- The README stays a front door (at most 300 lines), and its relative links lead to files (and headings) that exist.
- The generated Reference names every flag and ini key of `flags.OPTIONS`, every fixture pytest lists for the
  plugin, every marker, verdict, status, layer, cell, conftest hook, `controlplane audit` option and public name.
  The names are read from the built HTML, and the lists they are checked against come from the code by another way
  than the one the hook uses (pytest's own `--fixtures`, the parser's actions), so a page that drops one fails here.
"""

from __future__ import annotations

import html
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.relative_to(ROOT / "docs").parts)
MARKDOWN = [README, *PAGES]
BLOCK = re.compile(r"^<!-- example: (\w+) -->\n```python\n(.*?)```", re.S | re.M)
MARKER = re.compile(r"^<!-- example: (\w+) -->$", re.M)


def name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def examples(page: Path, kind: str) -> list[str]:
    return [code for marked, code in BLOCK.findall(page.read_text(encoding="utf-8")) if marked == kind]


def files_of(code: str) -> dict[str, str]:
    """A block cut into files at `# name.py` comment lines."""
    files: dict[str, str] = {}
    current = None
    for line in code.splitlines(keepends=True):
        header = re.fullmatch(r"# (\w+\.py)\n", line)
        if header:
            current = header.group(1)
            files[current] = ""
        elif current is None:
            raise AssertionError(f"a pytest example must start with a `# file.py` line:\n{code}")
        else:
            files[current] += line
    return files


# --- the examples ---------------------------------------------------------------------------------------------


def test_every_marker_is_a_known_kind_and_marks_a_python_block():
    for page in MARKDOWN:
        text = page.read_text(encoding="utf-8")
        assert set(MARKER.findall(text)) <= {"python", "pytest"}, name(page)
        # A marker not followed by a ```python block would be skipped silently.
        assert len(MARKER.findall(text)) == len(BLOCK.findall(text)), name(page)


def test_there_are_complete_examples_of_both_kinds_and_the_multi_mode_pattern_is_one():
    assert examples(README, "pytest"), "the README's first test must run as written"
    assert sum(len(examples(p, "python")) for p in MARKDOWN) >= 3
    assert sum(len(examples(p, "pytest")) for p in MARKDOWN) >= 3
    multi_mode = [code for p in MARKDOWN for code in examples(p, "pytest") if "permission_modes=" in code]
    # The marker selects with none of routes/forms/tags, so the automatic `[offered-tools]` item is part of it.
    assert multi_mode and all(
        re.search(r"@pytest\.mark\.bypass_variants\((?:(?!routes=|forms=|tags=)[^)])*\)", code) for code in multi_mode
    ), multi_mode


PYTHON_EXAMPLES = [(page, code) for page in MARKDOWN for code in examples(page, "python")]


@pytest.mark.parametrize(
    "page, code", PYTHON_EXAMPLES, ids=[f"{name(p)}:{c.strip().splitlines()[-1][:40]}" for p, c in PYTHON_EXAMPLES]
)
def test_a_python_example_runs(tmp_path, page, code):
    (tmp_path / "example.py").write_text(code)
    result = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{name(page)}:\n{result.stderr}"


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in MARKDOWN if examples(p, "pytest")], ids=name)
def test_the_pytest_examples_of_a_page_pass(pytester, page):
    tests = []
    for code in examples(page, "pytest"):
        for file, content in files_of(code).items():
            assert not (pytester.path / file).exists(), f"two examples of {name(page)} write {file}"
            (pytester.path / file).write_text(content)
            tests += re.findall(r"^def (test_\w+)", content, re.M)
    reports = pytester.inline_run("-p", "no:randomly").getreports("pytest_runtest_logreport")
    failed = [r for r in reports if r.failed]
    assert not failed, "\n\n".join(f"{r.nodeid} ({r.when}):\n{r.longreprtext[-3000:]}" for r in failed)
    passed = {r.nodeid for r in reports if r.when == "call" and r.passed}
    skipped = {r.nodeid: str(r.longrepr) for r in reports if r.skipped}
    # A test that needs a world network skips where none can be made (it never runs on the host's network instead).
    offline = {nodeid for nodeid, why in skipped.items() if "no world network can be made here" in why}
    for test in tests:
        assert any(f"::{test}" in nodeid for nodeid in passed | offline), (test, sorted(passed), skipped)
    # Only a bypass variant whose route this agent does not offer may skip (besides those).
    reasons = ("does not apply", "offers no tool", "no world network can be made here")
    assert all(any(reason in why for reason in reasons) for why in skipped.values()), skipped
    for code in examples(page, "pytest"):
        if "permission_modes=" in code:  # the multi-mode pattern, its offered-tools sweep included
            assert any(nodeid.endswith("[offered-tools]") for nodeid in passed), (sorted(passed), skipped)


# --- the README -----------------------------------------------------------------------------------------------


def test_the_readme_is_a_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move the detail into docs/"
    text = "\n".join(lines)
    for command in ("make demo", "make test", "controlplane audit path/to/your/repo --quick", "docs/tutorial.md"):
        assert command in text, command


def slug(heading: str) -> str:
    """A heading's anchor, as GitHub and mkdocs' toc make it (for the headings these files use)."""
    words = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return words.replace(" ", "-")


def anchors(markdown: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", markdown.read_text(encoding="utf-8"), flags=re.S)
    return {slug(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}


def test_every_relative_link_of_the_readme_leads_somewhere():
    text = re.sub(r"```.*?```", "", README.read_text(encoding="utf-8"), flags=re.S)
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert len(links) > 20
    for link in links:
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (ROOT / path) if path else README
        generated = path.startswith("docs/reference/") and path != "docs/reference/index.md"
        assert target.exists() and not generated, f"README links to {link}, which is no file of the repository"
        if anchor and target.suffix == ".md":
            assert anchor in anchors(target), f"README links to {link}: {path or 'README.md'} has no such heading"


# --- the site and its generated reference ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built as `make docs` builds it (strict: a warning is an error)."""
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-5000:]
    return out


def test_the_site_builds_strictly_with_every_page(site):
    for page in PAGES:
        built = site / page.relative_to(ROOT / "docs").with_suffix("")
        built = built.parent / "index.html" if built.name == "index" else built / "index.html"
        assert built.is_file(), f"{name(page)} was not built"
    assert (site / "ci-audit-shards.yml").is_file() and (site / "audit-naive-guard.txt").is_file()
    ci = (site / "how-to" / "ci" / "index.html").read_text(encoding="utf-8")
    assert "upload-sarif" in ci, "the workflow is embedded in the CI page"


def code_in(site: Path, page: str) -> set[str]:
    """The text of every <code> element of a built reference page."""
    built = (site / "reference" / page / "index.html").read_text(encoding="utf-8")
    spans = re.findall(r"<code[^>]*>(.*?)</code>", built, re.S)
    return {html.unescape(re.sub(r"<[^>]+>", "", span)).strip() for span in spans}


def test_the_options_page_names_every_flag_and_ini_key(site):
    from pytest_controlplane.flags import OPTIONS

    shown = code_in(site, "options")
    flags = [f"--{o.name.replace('_', '-')}" for o in OPTIONS if o.help]
    keys = [o.name for o in OPTIONS if o.ini_help]
    assert len(flags) > 20 and len(keys) > 10
    assert [f for f in flags if f not in shown] == [] and [k for k in keys if k not in shown] == []


def test_the_fixtures_page_names_every_fixture_pytest_lists_for_the_plugin(site, tmp_path):
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--fixtures", "-p", "no:randomly", "-p", "no:cacheprovider"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    section = listed.split("fixtures defined from pytest_controlplane.plugin.fixtures", 1)[1].split("\n---", 1)[0]
    fixtures = re.findall(r"^(\w+)(?: \[\w+ scope\])? -- ", section, re.M)
    assert {"agent", "agent_session", "canary_secret", "bypass_variants", "scripted_model"} <= set(fixtures)
    built = (site / "reference" / "fixtures" / "index.html").read_text(encoding="utf-8")
    headings = {html.unescape(re.sub(r"<[^>]+>", "", h)).strip() for h in re.findall(r"<h2[^>]*>(.*?)</h2>", built)}
    assert sorted(set(fixtures) - {h.rstrip("¶") for h in headings}) == []


def test_the_markers_page_shows_each_marker_with_its_signature(site):
    from pytest_controlplane import config

    shown = " ".join(code_in(site, "markers"))
    for signature in (config.MARKER_SIGNATURE, config.BYPASS_SIGNATURE, "agent_warm"):
        assert f"@pytest.mark.{signature}" in shown, signature
    for key in (*config.MARKER_KEYS, *config.BYPASS_KEYS):
        assert key in code_in(site, "markers"), key


def test_the_verdicts_page_names_every_verdict_status_layer_and_cell(site):
    from pytest_controlplane.audit.matrix import SYMBOLS
    from pytest_controlplane.audit.records import CELLS
    from pytest_controlplane.bypass.judge import STATUSES
    from pytest_controlplane.layers import LAYERS
    from pytest_controlplane.tool_call import VERDICTS

    shown = code_in(site, "verdicts")
    for names in (VERDICTS, STATUSES, tuple(LAYERS), CELLS, tuple(SYMBOLS[c] for c in CELLS)):
        assert [n for n in names if n not in shown] == [], names


def test_the_hooks_cli_and_api_pages_name_everything(site):
    import pytest_controlplane
    from pytest_controlplane import hooks
    from pytest_controlplane.audit.command import parser

    specs = [n for n, f in inspect.getmembers(hooks, inspect.isfunction) if n.startswith("pytest_")]
    assert specs and [s for s in specs if s not in code_in(site, "hooks")] == []
    cli = " ".join(code_in(site, "cli"))
    options = [o for action in parser()._actions for o in action.option_strings]
    assert "--quick" in options and [o for o in options if o not in cli] == []
    for command in ("controlplane audit merge", "controlplane serve", "controlplane cassettes", "controlplane cli install",
                    "controlplane cli list"):
        assert f"usage: {command}" in cli, command
    api = code_in(site, "api")
    assert [n for n in pytest_controlplane.__all__ if n != "__version__" and n not in api] == []


def reference_hook():
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs" / "hooks" / "reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_generated_page_is_committed():
    reference = reference_hook()
    committed = [path for path in reference.PAGES if (ROOT / "docs" / path).exists()]
    assert committed == [], f"docs/hooks/reference.py generates {committed}: delete the files"


def test_a_verdict_or_layer_the_reference_cannot_describe_stops_the_build(monkeypatch):
    # The modules as sys.modules has them: an earlier in-process pytester run may have left the package's attribute
    # pointing at a copy it imported and then dropped, and the reference imports from sys.modules.
    layers = importlib.import_module("pytest_controlplane.layers")
    tool_call = importlib.import_module("pytest_controlplane.tool_call")

    reference = reference_hook()
    monkeypatch.setattr(tool_call, "VERDICTS", (*tool_call.VERDICTS, "quarantined"))
    with pytest.raises(reference.UndocumentedError, match="quarantined"):
        reference.verdicts_page()
    monkeypatch.undo()
    monkeypatch.setattr(layers, "LAYERS", {**layers.LAYERS, "firewall": "the network firewall"})
    with pytest.raises(reference.UndocumentedError, match="firewall"):
        reference.verdicts_page()
