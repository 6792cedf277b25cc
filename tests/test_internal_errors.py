"""No crash passes: an internal error anywhere in a run makes it exit non-zero, with one line saying what broke and
where, under xdist too (where pytest alone exits 0 for an error a worker raises while reporting a test, or at its
session's end)."""

from __future__ import annotations

import pytest

TESTS = """
def test_one():
    pass


def test_two():
    pass
"""

# A plugin (ours, the audit's, a user's) that breaks in a worker (a process with `workerinput`; not the environment's
# PYTEST_XDIST_WORKER, which this suite's own workers pass on): where it breaks is the parameter.
BROKEN = """
import pytest

WHERE = {where!r}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if WHERE == "report" and hasattr(item.config, "workerinput") and call.when == "call":
        raise AttributeError("'NotSetType' object has no attribute 'family'")
    return report


def pytest_sessionfinish(session):
    if WHERE == "session end" and hasattr(session.config, "workerinput"):
        raise AttributeError("'NotSetType' object has no attribute 'family'")
"""


@pytest.mark.parametrize("where", ["report", "session end"])
def test_an_error_in_a_worker_fails_the_run_and_says_where(pytester: pytest.Pytester, where: str) -> None:
    pytester.makeconftest(BROKEN.format(where=where))
    pytester.makepyfile(test_it=TESTS)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR, result.stdout.str()
    result.stdout.re_match_lines(
        [r"controlplane: the run broke, so it fails: (in worker gw\d: )?AttributeError: 'NotSetType' object has no "
         r"attribute 'family' \(.*conftest.py:\d+, in pytest_(runtest_makereport|sessionfinish)\)"]
    )  # fmt: skip


def test_a_run_that_did_not_break_says_nothing_of_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(BROKEN.format(where="nowhere"))
    pytester.makepyfile(test_it=TESTS)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "the run broke" not in result.stdout.str()
    result.assert_outcomes(passed=2)


def test_an_error_in_a_run_without_workers_says_where_too(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(BROKEN.format(where="report").replace('hasattr(item.config, "workerinput") and ', ""))
    pytester.makepyfile(test_it=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines(["controlplane: the run broke, so it fails: AttributeError: *conftest.py:*"])
