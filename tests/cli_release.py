"""The Claude Code CLI release a test run drives, for the tests whose expectations are facts of that release (marked
`cli_dependent`; the facts are pytest_controlplane.cli_facts).  Their pytester suites choose the CLI as the run does,
from the environment: $CONTROLPLANE_CLI (which `make test-clis` sets), else the default CLI (the bundled one).  Choose
another release for them with $CONTROLPLANE_CLI, not --agent-cli: the suites they start do not see the run's options."""

from __future__ import annotations

import functools
import os
from typing import Any


@functools.cache
def running_cli() -> Any:
    """The CLI this run's suites drive (a clis.choice.Cli: its path, version and source)."""
    from pytest_controlplane.clis.choice import choose, default

    chosen = os.environ.get("CONTROLPLANE_CLI", "").strip()
    return choose(chosen, "$CONTROLPLANE_CLI") if chosen else default()


def running() -> str:
    """The version of the CLI this run's suites drive ("2.1.332")."""
    return str(running_cli().version)
