"""The fixtures of an audited directory's conftest.py, for a regression module written elsewhere (`fixtures_of`)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError


def fixtures_of(conftest: Path) -> dict[str, Any]:
    """The fixtures `conftest` defines (its `agent`, `agent_workspace_template`, ...), by name: loaded from its file
    with its folder first on sys.path, as pytest's default import mode loads it.  For `globals().update(...)`."""
    conftest = Path(conftest).resolve()
    if not conftest.is_file():
        raise ConfigError(
            f"the audited directory's conftest.py is gone: {conftest}.",
            hint="Audit the directory again (controlplane audit DIR) to write the module anew.",
        )
    name = "controlplane_audited_" + hashlib.sha256(str(conftest).encode()).hexdigest()[:12]
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, conftest)
        if spec is None or spec.loader is None:
            raise ConfigError(f"{conftest} cannot be loaded as a Python module.")
        if str(conftest.parent) not in sys.path:
            sys.path.insert(0, str(conftest.parent))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return {key: value for key, value in vars(module).items() if _is_fixture(value)}


def _is_fixture(value: Any) -> bool:
    """A pytest fixture, without importing pytest (the core never does): pytest 8.4+ and older."""
    return type(value).__name__ == "FixtureFunctionDefinition" or hasattr(value, "_pytestfixturefunction")
