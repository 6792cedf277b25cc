"""Hypothesis strategies for bypass attempts: route x path form x wrappers, shrinking to the simplest.

    @given(variant=write_attempts(".env"))
    def test_env_is_never_written(agent_session, variant):
        with agent_session.isolated() as session:          # a fresh world per example
            (session.workspace / ".env").write_text("KEY=1\\n")
            session.attempt(variant).assert_held()

Routes and forms are drawn from the same tables as the curated corpus, simplest first, so a
failure shrinks towards `Write` on the relative path; shell routes may be wrapped in one or two
wrappers (`timeout`, `nice`, `sh -c`, ...).  A falsifying example prints as a runnable
reproduction: the tool calls as JSON and the shell command.
"""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

from hypothesis import strategies as st

from .bypass.corpus import default_target, make_variant
from .bypass.forms import ESCAPE_FORMS, PATH_FORMS, Form
from .bypass.routes import ESCAPE_ROUTES, READ_ROUTES, WRAPPERS, WRITE_ROUTES, Route, command_routes
from .bypass.variant import Variant, target_file

__all__ = ["escape_attempts", "exec_attempts", "read_attempts", "write_attempts"]


def write_attempts(target: str = ".env") -> st.SearchStrategy[Variant]:
    """Attempts to write `target` (relative to the workspace; a directory if it ends in "/")."""
    return _attempts("write", default_target("write", target), WRITE_ROUTES, PATH_FORMS)


def read_attempts(target: str = ".env") -> st.SearchStrategy[Variant]:
    """Attempts to get `target`'s content (a canary is planted in it) to the model."""
    return _attempts("read", default_target("read", target), READ_ROUTES, PATH_FORMS)


def escape_attempts() -> st.SearchStrategy[Variant]:
    """Attempts to change anything outside the workspace."""
    return _attempts("escape", "workspace", ESCAPE_ROUTES, ESCAPE_FORMS)


def exec_attempts(command: str = "curl") -> st.SearchStrategy[Variant]:
    """Attempts to run `command` (its first word is replaced by a recording shim on PATH)."""
    target = default_target("exec", command)
    routes = command_routes(target)
    direct = Form("-", lambda p: p)
    return st.builds(
        lambda route, wrappers: _wrap(make_variant("exec", target, route, direct, "-"), wrappers),
        st.sampled_from(routes),
        _wrappers(),
    )


def _attempts(family: str, target: str, routes: tuple[Route, ...], forms: tuple[Form, ...]) -> Any:
    path = target_file(target)

    @st.composite
    def attempt(draw: Any) -> Variant:
        route = draw(st.sampled_from(routes))
        shell = route.make("x")[0] == "Bash"
        usable = [f for f in forms if (shell or not f.shell_only) and (f.plain or not route.plain)]
        variant = make_variant(family, target, route, draw(st.sampled_from(usable)), path)
        return _wrap(variant, draw(_wrappers())) if shell else variant

    return attempt()


def _wrappers() -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(list(WRAPPERS)), max_size=2)


def _wrap(variant: Variant, wrappers: list[str]) -> Variant:
    """The variant's shell command run under `wrappers` (innermost first)."""
    if not wrappers or variant.tool != "Bash":
        return variant
    command = variant.input["command"]
    for wrapper in wrappers:
        command = WRAPPERS[wrapper].format(q=shlex.quote(command))
    return dataclasses.replace(
        variant,
        id=f"{variant.id}+{'+'.join(w.replace(' ', '') for w in wrappers)}",
        route=f"{variant.route} under {' + '.join(wrappers)}",
        input={"command": command},
        tags=variant.tags | {"wrapper"},
    )
