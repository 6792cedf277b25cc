"""No crash passes: an internal error anywhere in the run (the plugin, the audit, a user's plugin, an xdist worker)
makes the run exit non-zero, with one line at its end saying what broke and where.

pytest itself exits 3 on an internal error in a plain run, but under xdist two are lost: one raised while a worker
makes a test's report reaches the controller as a printed INTERNALERROR and the run exits 0 ("no tests ran"); one
raised in a worker's session end comes after the worker has said it finished, and is never told at all.
"""

from __future__ import annotations

import traceback
from collections.abc import Generator
from typing import Any

import pytest

_OUTPUT = "controlplane_internal_error"  # the key of a worker's own line in what it sends the controller at its end


def one_line(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """What broke and where, in one line: `Type: message (file:line, in function)`."""
    if isinstance(excinfo.value, AssertionError) and 'File "' in str(excinfo.value):
        return _from_text(str(excinfo.value))  # xdist re-raises a worker's error as an assertion holding its traceback
    frame = traceback.extract_tb(excinfo.tb)[-1]
    return f"{excinfo.typename}: {excinfo.value} ({frame.filename}:{frame.lineno}, in {frame.name})"


def _from_text(text: str) -> str:
    """The same line from a formatted traceback: its last frame and the exception line after it."""
    lines = text.splitlines()
    last = max(i for i, line in enumerate(lines) if line.strip().startswith('File "'))
    file, _, rest = lines[last].strip().removeprefix('File "').partition('", line ')
    number, _, function = rest.partition(", in ")
    error = next((line.strip() for line in lines[last + 1 :] if line.strip() and not line.startswith("    ")), "")
    return f"{error} ({file}:{number}, in {function})"


class InternalErrors:
    """The run's internal errors, its own and its workers'; the run fails on any."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.seen: list[str] = []

    def pytest_internalerror(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.seen.append(one_line(excinfo))

    def pytest_testnodedown(self, node: Any) -> None:
        """A worker's end: an error in its own session end comes with its last words."""
        line = getattr(node, "workeroutput", {}).get(_OUTPUT)
        if line:
            self.seen.append(f"in worker {node.gateway.id}: {line}")

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        """In a worker: its session end's error goes to the controller.  In the controller (or a run without
        workers): any internal error seen makes the exit status 3, and the last lines say which."""
        output = getattr(self.config, "workeroutput", None)
        try:
            yield
        except Exception as error:
            if output is not None:
                output[_OUTPUT] = one_line(pytest.ExceptionInfo.from_exception(error))
            raise
        if output is None and self.seen:
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            for line in dict.fromkeys(self.seen):
                message = f"controlplane: the run broke, so it fails: {line}"
                if reporter is None:
                    print(message)
                    continue
                reporter.ensure_newline()
                reporter.write_line(message, red=True, bold=True)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(InternalErrors(config), "controlplane-internal-errors")
