import os
from collections.abc import Iterator, Mapping

# pytester's in-process runs restore sys.modules after each run, so whatever an inner run imports is
# imported again by the next one (anthropic alone takes ~1.6 s).  Importing the heavy packages once
# here keeps them out of that churn; the plugin itself still imports them lazily.
import anthropic  # noqa: F401
import claude_agent_sdk  # noqa: F401
import pytest
import vcr.serialize  # noqa: F401

pytest_plugins = ["pytester"]

# Masks are keyed (canary/mask_key.py): the suite's own key, so no run makes a key file in the real home.  The tests of
# the key file take this variable out of their environment.
os.environ.setdefault("CONTROLPLANE_MASK_KEY", "pytest-controlplane's own test suite")

# Set by pytest itself around each phase of a test.
_PYTEST_OWN = frozenset({"PYTEST_CURRENT_TEST"})
_ENV_BEFORE = pytest.StashKey[dict[str, str]]()
_ENV_AT_START = dict(os.environ)  # as this conftest loads: before any test module is collected


def _env_changes(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """The variables set, changed or removed between two copies of os.environ, by name only (values may be
    secrets: canaries, API keys); "" if none."""
    names = (set(before) | set(after)) - _PYTEST_OWN
    changes = {"left set": sorted(n for n in names if n not in before),
               "changed": sorted(n for n in names if n in before and n in after and before[n] != after[n]),
               "removed": sorted(n for n in names if n not in after)}
    return "; ".join(f"{what}: {', '.join(found)}" for what, found in changes.items() if found)


def _restore_env(before: Mapping[str, str]) -> None:
    for name in set(os.environ) - set(before) - _PYTEST_OWN:
        del os.environ[name]
    for name, value in before.items():
        if name not in _PYTEST_OWN and os.environ.get(name) != value:
            os.environ[name] = value


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    item.stash[_ENV_BEFORE] = dict(os.environ)  # before any fixture of the test, so after all of them are undone
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After every fixture of the test is torn down (monkeypatch undone), os.environ must be as the test found it.
    A test that changed it fails here, naming the variables, and the environment is put back so that the
    tests after it run in the one they expect.  (After the last test the session check below has run too: what
    this test did is still pinned on it.)"""
    try:
        return (yield)
    finally:
        before = item.stash.get(_ENV_BEFORE, None)
        changes = _env_changes(before, os.environ) if before is not None else ""
        if changes:
            _restore_env(before)
            pytest.fail(f"{item.nodeid} changed os.environ and did not put it back ({changes}). Use "
                        "monkeypatch.setenv / monkeypatch.delenv, which undo themselves.", pytrace=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--inner-workers", type=int, default=2,
                     help="xdist workers of the suites the tests run through pytester when the worker count does not "
                          "matter (0: in the test's own process, as `make mutate` needs: a worker imports the package, "
                          "not the mutant)")


@pytest.fixture
def inner_workers(request: pytest.FixtureRequest) -> list[str]:
    """pytester arguments for --inner-workers."""
    count = request.config.getoption("--inner-workers")
    return ["-n", str(count)] if count else []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `make mutate` (mutmut sets MUTANT_UNDER_TEST to the mutant's name), a mutant's tests run fastest first,
    by the times mutmut measured: with `-x`, a killed mutant costs its fastest failing test, not its slowest."""
    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):
        return
    import json

    try:
        with open("mutmut-stats.json", encoding="utf-8") as stats:
            seconds = json.load(stats)["duration_by_test"]
    except (OSError, ValueError, KeyError):
        return
    items.sort(key=lambda item: seconds.get(item.nodeid, 0.0))


@pytest.fixture(scope="session", autouse=True)
def _env_at_session_end_is_as_at_its_start() -> Iterator[None]:
    """os.environ after the last test is what it was before collection: catches what the per-test check cannot
    pin on a test (a change made while collecting a module, by a session fixture, by a plugin)."""
    yield
    changes = _env_changes(_ENV_AT_START, os.environ)
    if changes:
        pytest.fail(f"The test session changed os.environ and did not put it back ({changes}).", pytrace=False)


@pytest.fixture(autouse=True)
def _no_ambient_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite decides its own modes and keys: nothing from the developer's shell leaks in."""
    for name in ("CONTROLPLANE_MODE", "CONTROLPLANE_UPSTREAM", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester run is a user's project, whose tests run in the order written (this suite itself runs in random
    order with pytest-randomly); pytester clears PYTEST_ADDOPTS when it starts, so it is set after."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:randomly")
    return pytester



@pytest.fixture
def world_network_here() -> None:
    """Skip unless a world network can be made here (see skip_without_world_network)."""
    from pytest_controlplane.agents.networked import unavailable_here
    from world_network_skip import skip_without_world_network

    skip_without_world_network(unavailable_here())
