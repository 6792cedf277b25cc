"""`--agent-script FILE.py:NAME` (ini agent_script): the stand-in a recording run forwards to, served in this pytest
process (each xdist worker its own) from the first test that records until the run ends (gateway/stand_in.py).

Where record/auto/live modes forward, highest first: --agent-script or --agent-upstream > $CONTROLPLANE_UPSTREAM > ini
agent_script or agent_upstream > the Anthropic API.  Both at one level is a usage error.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from .. import config as settings_
from ..errors import ConfigError

STAND_IN = pytest.StashKey[Any]()  # the run's gateway.stand_in.StandIn


def pytest_configure(config: pytest.Config) -> None:
    try:
        chosen = _stand_in_spec(config)
        if chosen is not None:
            from ..gateway.stand_in import StandIn

            spec, flag, base = chosen
            config.stash[STAND_IN] = StandIn(spec, flag=flag, base=base, root=config.rootpath)
    except ConfigError as error:
        raise pytest.UsageError(str(error)) from None


def pytest_unconfigure(config: pytest.Config) -> None:
    stand_in = config.stash.get(STAND_IN, None)
    if stand_in is not None:
        stand_in.close()


def upstream(config: pytest.Config) -> tuple[str | None, str | None]:
    """Where this run's record/auto/live modes forward (None: the Anthropic API), and the stand-in's FILE.py:NAME
    when it is the stand-in (started here, on first use)."""
    stand_in = config.stash.get(STAND_IN, None)
    if stand_in is not None:
        return stand_in.url(), stand_in.spec
    flag, env = config.getoption("agent_upstream"), os.environ.get(settings_.UPSTREAM_ENV)
    return (flag or env or config.getini("agent_upstream") or None), None


def _stand_in_spec(config: pytest.Config) -> tuple[str, str, Any] | None:
    """The stand-in's spec, the option that gave it and the directory its FILE is relative to; None: no stand-in."""
    flag = config.getoption("agent_script")
    if flag:
        if config.getoption("agent_upstream"):
            raise ConfigError(
                "--agent-script and --agent-upstream both say where record mode forwards to: give one "
                "(--agent-script serves its scripted model as the upstream itself)."
            )
        mode = settings_.resolve_mode(
            marker=None,
            cli=config.getoption("agent_mode"),
            env=os.environ.get(settings_.MODE_ENV),
            ini=config.getini("agent_mode"),
        )
        if mode not in ("record", "auto"):
            does = "plays cassettes and calls no model" if mode == "replay" else "keeps no cassettes"
            raise ConfigError(
                f"--agent-script records cassettes from a stand-in (the scripted model {flag} serves as the API), "
                f"but this run's mode is {mode}, which {does}.",
                hint="Add --agent-mode=record (or auto) to record from it. For a test answered by a script without "
                "any cassette, mark it @pytest.mark.agent(script=...) or use the scripted_model fixture.",
            )
        return flag, "--agent-script", config.invocation_params.dir
    ini = config.getini("agent_script")
    if not ini or config.getoption("agent_upstream") or os.environ.get(settings_.UPSTREAM_ENV):
        return None
    if config.getini("agent_upstream"):
        raise ConfigError(
            "The ini options agent_script and agent_upstream both say where record mode forwards to: give one."
        )
    return ini, "ini option agent_script", config.inipath.parent if config.inipath else config.rootpath
