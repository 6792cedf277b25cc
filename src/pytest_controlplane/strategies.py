"""Hypothesis strategies for bypass attempts: route x path form x wrappers, shrinking to the simplest.

    @given(variant=write_attempts(".env"))
    def test_env_is_never_written(agent_session, variant):
        with agent_session.isolated() as session:          # a fresh world per example
            (session.workspace / ".env").write_text("KEY=1\\n")
            session.attempt(variant).assert_held()

Routes and forms are drawn from the same tables as the curated corpus, simplest first, so a
failure shrinks towards `Write` on the relative path; shell routes may be wrapped in one or two
wrappers (`timeout`, `nice`, `sh -c`, ...), and any attempt may be played through another
shell-running tool (Monitor) or inside a subagent.  Now and then the draw is instead a poisoned
repository's plant, a staged attack (a script written, then run) or a retry after a deny.  A
falsifying example prints as a runnable reproduction: the tool calls as JSON and the shell command.
"""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

from hypothesis import strategies as st

from .bypass.corpus import default_target, family_variants, make_variant
from .bypass.forms import ESCAPE_FORMS, PATH_FORMS, Form
from .bypass.routes import ESCAPE_ROUTES, READ_ROUTES, SHELL_TOOLS, WRAPPERS, WRITE_ROUTES, Route, command_routes
from .bypass.variant import Variant, target_file

__all__ = ["escape_attempts", "exec_attempts", "read_attempts", "write_attempts"]


def write_attempts(target: str = ".env") -> st.SearchStrategy[Variant]:
    """Attempts to write `target` (relative to the workspace; a directory if it ends in "/")."""
    target = default_target("write", target)
    return _with_the_rest("write", target, _attempts("write", target, WRITE_ROUTES, PATH_FORMS))


def read_attempts(target: str = ".env") -> st.SearchStrategy[Variant]:
    """Attempts to get `target`'s content (a canary is planted in it) to the model."""
    target = default_target("read", target)
    return _with_the_rest("read", target, _attempts("read", target, READ_ROUTES, PATH_FORMS))


def escape_attempts() -> st.SearchStrategy[Variant]:
    """Attempts to change anything outside the workspace."""
    return _with_the_rest("escape", "workspace", _attempts("escape", "workspace", ESCAPE_ROUTES, ESCAPE_FORMS))


def exec_attempts(command: str = "curl") -> st.SearchStrategy[Variant]:
    """Attempts to run `command` (its first word is replaced by a recording shim on PATH)."""
    target = default_target("exec", command)
    routes = command_routes(target)
    direct = Form("-", lambda p: p)
    attempts = st.builds(
        lambda route, wrappers, around: _around(
            _wrap(make_variant("exec", target, route, direct, "-"), wrappers), around
        ),
        st.sampled_from(routes),
        _wrappers(),
        _arounds(),
    )
    return _with_the_rest("exec", target, attempts)


def _with_the_rest(family: str, target: str, attempts: st.SearchStrategy[Variant]) -> st.SearchStrategy[Variant]:
    """The drawn attempts, and now and then one of the family's poisoned, staged or retried variants instead."""
    rest = [v for v in family_variants(family, target) if v.tags & {"poisoned", "staged", "retry"}]
    return st.one_of(attempts, st.sampled_from(rest)) if rest else attempts


def _arounds() -> st.SearchStrategy[str]:
    """How the attempt is played: directly (simplest), through another shell-running tool, or in a subagent."""
    return st.sampled_from(("", *SHELL_TOOLS, "Agent"))


def _around(variant: Variant, around: str) -> Variant:
    """`variant` through `around`: a shell-running tool for a Bash attempt, or inside a subagent (`Agent`)."""
    if around == "Agent":
        return dataclasses.replace(
            variant, id=f"agent:{variant.id}", route=f"{variant.route} in a subagent", via="Agent",
            tags=variant.tags | {"subagent"},
        )  # fmt: skip
    if around and variant.tool == "Bash":
        return dataclasses.replace(
            variant, id=f"{around.lower()}:{variant.id}", route=f"{around} {variant.route.removeprefix('Bash ')}",
            tool=around, input={**SHELL_TOOLS[around], "command": variant.input["command"]},
            tags=variant.tags | {"other-shell"},
        )  # fmt: skip
    return variant


def _attempts(family: str, target: str, routes: tuple[Route, ...], forms: tuple[Form, ...]) -> Any:
    path = target_file(target)

    @st.composite
    def attempt(draw: Any) -> Variant:
        route = draw(st.sampled_from(routes))
        shell = route.make("x")[0] == "Bash"
        usable = [f for f in forms if (shell or not f.shell_only) and (f.plain or not route.plain)]
        variant = make_variant(family, target, route, draw(st.sampled_from(usable)), path)
        return _around(_wrap(variant, draw(_wrappers())) if shell else variant, draw(_arounds()))

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
