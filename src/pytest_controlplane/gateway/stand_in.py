"""The stand-in: a scripted model served on loopback as the API to record from, so that a suite records without
Claude (and says so in its cassettes).

    controlplane serve --script model_script.py:MODEL                   # from a shell: prints ANTHROPIC_BASE_URL=...
    pytest --agent-mode=record --agent-script model_script.py:MODEL     # inside pytest, for the run

`FILE.py:NAME` names a ScriptedModel, a list of turns, or a dict of them by test id.  Each test that records through
the stand-in gets its script from the start (scripted.ScriptPerTest).  The recording gateway writes the spec into
the cassettes' metadata (`script`), so that the command that records them again serves the same one (rerecord.py).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from ..errors import ConfigError
from .scripted import ScriptPerTest
from .server import ModelGateway


class StandIn:
    """The scripted model `spec` names, served by a gateway of its own (opened on the first `url()`)."""

    def __init__(
        self, spec: str, *, flag: str = "--script", base: Path | None = None, root: Path | None = None
    ) -> None:
        """`spec` is FILE.py:NAME with FILE relative to `base` (default: the current directory); `.spec` says it
        relative to `root` (where the command that records again runs) when the file lies there.  A spec that
        names no file, or no NAME, or a file that raises, is a ConfigError naming `flag`."""
        file, _, name = spec.partition(":")
        if not name or not file:
            raise ConfigError(
                f"{flag} takes FILE.py:NAME (a ScriptedModel, a list of turns, or a dict of them by test id), "
                f"got {spec!r}."
            )
        path = Path(os.path.abspath((base or Path.cwd()) / file))
        script = _load(path, name, shown=file, flag=flag)
        self.spec = f"{_under(path, root).as_posix()}:{name}"
        self.gateway = ModelGateway(mode="script", script=ScriptPerTest(script))
        self._open = False

    def url(self) -> str:
        if not self._open:
            self.gateway.open()
            self._open = True
        return self.gateway.base_url

    def close(self) -> None:
        if self._open:
            self.gateway.close()
            self._open = False


def _load(path: Path, name: str, *, shown: str, flag: str) -> object:
    """The object `name` defined in the Python file at `path` (`shown` as the user gave it)."""
    if not path.is_file():
        raise ConfigError(f"{flag}: no such file {shown!r}.", hint="Give the path of the .py file that defines it.")
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    if module_spec is None or module_spec.loader is None:
        raise ConfigError(f"{flag}: {shown} cannot be loaded as a Python module.", hint="Give a .py file.")
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as error:  # the user's code: whatever it raises, said in one line
        raise ConfigError(
            f"{flag}: running {shown} raised {type(error).__name__}: {error}.",
            hint=f"Fix {shown}; `python {shown}` shows the traceback.",
        ) from error
    if not hasattr(module, name):
        defined = sorted(k for k in vars(module) if not k.startswith("_") and k.isupper())
        raise ConfigError(
            f"{flag}: {shown} defines no {name!r}" + (f" (it defines {', '.join(defined)})." if defined else ".")
        )
    return getattr(module, name)


def _under(path: Path, root: Path | None) -> Path:
    if root is not None and path.is_relative_to(root):
        return path.relative_to(root)
    return path
