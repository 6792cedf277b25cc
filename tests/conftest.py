import pytest

# pytester's in-process runs restore sys.modules after each run, so whatever an inner run imports is
# imported again by the next one (anthropic alone takes ~1.6 s).  Importing the heavy packages once
# here keeps them out of that churn; the plugin itself still imports them lazily.
import anthropic  # noqa: F401
import claude_agent_sdk  # noqa: F401
import vcr.serialize  # noqa: F401

pytest_plugins = ["pytester"]


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
