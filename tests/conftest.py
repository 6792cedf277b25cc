import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _no_ambient_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite decides its own modes and keys: nothing from the developer's shell leaks in."""
    for name in ("CONTROLPLANE_MODE", "CONTROLPLANE_UPSTREAM", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
