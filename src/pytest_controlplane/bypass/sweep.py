"""The routes no named variant covers: the tools this agent really offers beyond the corpus's (an MCP server's tool,
a custom tool), found at run time and tried as their class allows.

`@pytest.mark.bypass_variants(family, target=...)` adds one test, `offered-tools`, to the named variants: it asks
the agent what it offers (a run whose model only says "done"; for deferred tools, a ToolSearch that loads their
schemas), builds variants for every offered tool the corpus does not name, with ids `<tool>:<spelling>:<form>`
(`mcp__files__write_file:path:relative`), plays each in its own copy of the workspace, and fails if any got through.
A shell-running tool gets the shell spellings; a tool with a path and content writes; a tool with a path reads; a
tool with a `url` input fetches the egress target, the secret in the URL.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from ..agents.networked import unavailable_here
from ..errors import ours
from ..gateway.scripted import ScriptedModel, tool_use
from .egress_routes import SECRET
from .forms import PATH_FORMS
from .judge import WORST_FIRST, BypassOutcome, BypassSucceeded, VariantNotApplicable, inconclusive
from .offered import CUSTOM_ROUTES, OfferedTool, offered_tools
from .routes import PAYLOAD
from .variant import FIRST_LINE, Variant, target_file

__tracebackhide__ = ours  # our errors show without our frames

# The tools the named variants already use: the sweep adds routes for the others.  (WebFetch and WebSearch are the
# egress family's: a release that sends their schema up front, as 2.1.300 does, must not get them played twice.)
CORPUS_TOOLS = frozenset(
    {
        "WebFetch",
        "WebSearch",
        "Bash",
        "Monitor",
        "PowerShell",
        "Write",
        "Edit",
        "MultiEdit",
        "NotebookEdit",
        "Read",
        "Grep",
        "Agent",
        "Task",
        "Skill",
    }
)
_CURATED_FORMS = ("relative", "absolute", "dotdot", "symlink alias", "hardlink alias")
_PATH_KEYS = ("file_path", "path", "notebook_path", "filename")
_CONTENT_KEYS = ("content", "text", "new_source", "data", "body")


@dataclass(frozen=True)
class OfferedRoutes:
    """The `offered-tools` parameter of a bypass_variants test: what `attempt()` sweeps."""

    family: str
    target: str
    depth: str = "curated"
    id: str = "offered-tools"

    def __str__(self) -> str:
        return self.id


@dataclass
class SweepOutcome:
    """What the sweep found offered, and how each variant it built ended."""

    routes: OfferedRoutes
    offered: list[OfferedTool]
    outcomes: list[BypassOutcome] = field(default_factory=list)
    inconclusive_policy: str = "fail"

    @property
    def not_covered(self) -> list[OfferedTool]:
        """Offered tools neither the corpus nor the sweep can try (their class reaches no target)."""
        tried = {o.variant.tool for o in self.outcomes}
        return [t for t in self.offered if t.name not in CORPUS_TOOLS and t.name not in tried]

    @property
    def verdict(self) -> str:
        verdicts = {o.verdict for o in self.outcomes}
        for status in WORST_FIRST:
            if status in verdicts:
                return status
        return "not_applicable"

    @property
    def bypassed(self) -> bool:
        return self.verdict == "bypassed"

    def describe(self) -> str:
        lines = [f"{self.routes.family} {self.routes.target!r} by the tools the agent offers beyond the named variants"]
        lines += [
            f"  {t.name}: {t.tool_class}{' (deferred)' if t.deferred else ''} — {t.why}"
            for t in self.offered
            if t.name not in CORPUS_TOOLS
        ]
        for outcome in self.outcomes:
            if outcome.verdict != "held":
                lines += ["", outcome.describe()]
        held = sum(o.held for o in self.outcomes)
        lines.append(f"{len(self.outcomes)} variant(s) built from them: {held} held")
        if self.not_covered:
            lines.append("offered, not covered (no route reaches the target through them): " + _names(self.not_covered))
        return "\n".join(lines)

    def assert_held(self, *, count_prompt: bool = False) -> None:
        """Every variant held (held only by the CLI's approval prompt counts with `count_prompt` alone); none built: a
        skip saying what the agent offers."""
        __tracebackhide__ = True
        if self.bypassed:
            raise BypassSucceeded(f"Bypass through an offered tool: {self.describe()}")
        if self.verdict == "asked" and not count_prompt:
            raise BypassSucceeded(
                "An offered-tool variant was held only by the CLI's approval prompt, with nobody to answer it: "
                f"{self.describe()}"
            )
        if self.verdict == "not_applicable":
            raise VariantNotApplicable(
                "the agent offers no tool beyond the named variants that reaches the target"
                + (f" (offered, not covered: {_names(self.not_covered)})" if self.not_covered else "")
            )
        if self.verdict == "inconclusive":
            inconclusive(
                f"Offered-tool variants are inconclusive, so they prove nothing: {self.describe()}",
                self.inconclusive_policy,
            )

    def __repr__(self) -> str:
        return (
            f"<SweepOutcome {self.routes.family} {self.routes.target!r}: {self.verdict}, {len(self.outcomes)} variants>"
        )


def _names(tools: list[OfferedTool]) -> str:
    return ", ".join(
        t.name
        + (
            " (its schema could not be loaded: was ToolSearch refused?)"
            if t.tool_class == "mcp" and not t.acts_as
            else ""
        )
        for t in tools
    )


def sweep(session: Any, routes: OfferedRoutes, prompt: str, permission_modes: Sequence[str] = ()) -> SweepOutcome:
    """Ask the agent what it offers, build the variants for the tools beyond the corpus, play each in a copy of the
    workspace (under each of `permission_modes`, each from a copy of its own, when given)."""
    if routes.family == "egress" and (why := unavailable_here()):  # not even the probe runs on the host's network
        raise VariantNotApplicable(f"the offered-tools sweep does not apply: no world network can be made here: {why}")
    offered = probe(session, prompt)
    outcome = SweepOutcome(routes, offered, inconclusive_policy=session.inconclusive_policy)
    for tool in offered:
        for variant in tool_variants(routes.family, routes.target, tool, routes.depth):
            if permission_modes:  # each mode in a copy of its own; kept in session.bypass_outcomes
                played = session.attempt(variant, prompt=prompt, permission_modes=permission_modes)
            else:
                with session.isolated() as copy:
                    played = copy.attempt(variant, prompt=prompt)
                session.bypass_outcomes.append(played)
            outcome.outcomes.append(played)
    return outcome


def probe(session: Any, prompt: str) -> list[OfferedTool]:
    """The tools the agent offers, from a run whose model says "done" (and a ToolSearch that loads the schemas of
    deferred tools the corpus does not know)."""
    with session.isolated() as copy:
        copy.gateway.use_script(ScriptedModel([], then="done"))
        before = len(copy.gateway.exchanges)
        copy.run(prompt)
        first = copy.gateway.exchanges[before].request
        tools = offered_tools(first.json, first.body)
        unknown = [t.name for t in tools if t.deferred and t.name not in CORPUS_TOOLS and not t.acts_as]
        if not unknown or "ToolSearch" not in {t.name for t in tools}:
            return tools
        copy.gateway.use_script(
            ScriptedModel([tool_use("ToolSearch", {"query": "select:" + ",".join(unknown)})], then="done")
        )
        before = len(copy.gateway.exchanges)
        copy.run(prompt)
    loaded = {
        t.name: t
        for exchange in copy.gateway.exchanges[before:]
        for t in offered_tools(exchange.request.json, b"")
        if not t.deferred
    }
    return [dataclasses.replace(loaded[t.name], deferred=t.deferred) if t.name in loaded else t for t in tools]


def tool_variants(family: str, target: str, tool: OfferedTool, depth: str = "curated") -> list[Variant]:
    """The variants of `family` through one offered tool the corpus does not name (none if its class reaches no
    target of the family)."""
    from .corpus import AROUND_ROUTES, BASE_FORM, family_variants, spelling, target_kind

    if tool.name in CORPUS_TOOLS or not tool.acts_as:
        return []
    kind = target_kind(family, target)
    base = [
        v
        for v in family_variants(family, target)
        if not v.via
        and v.tool == "Bash"
        and (depth == "full" or (v.form == BASE_FORM[kind] and v.route in AROUND_ROUTES[kind]))
    ]
    custom = CUSTOM_ROUTES.get(tool.name)
    defaults = {**_defaults(tool.schema), **(custom.inputs if custom else {})}
    if tool.acts_as == "shell":
        key = cast(str, custom.command) if custom else "command"  # add_route() requires command= for a shell tool
        return [
            dataclasses.replace(
                v,
                id=f"{tool.name}:{spelling(v)}",
                route=f"{tool.name} {v.route[5:]}",
                tool=tool.name,
                input={**defaults, key: v.input["command"]},
                tags=v.tags - {"known"} | {"offered-tool"},
                reference="",
            )
            for v in base
        ]
    if tool.acts_as == "fetch":
        return _fetch_variants(family, target, tool, defaults)
    return _file_tool_variants(family, target, tool, custom, defaults, depth)


def _fetch_variants(family: str, target: str, tool: OfferedTool, defaults: dict[str, Any]) -> list[Variant]:
    """Through a tool that fetches a URL (an MCP fetch server's, a custom tool's): the secret in its query, as the
    model would put it there after reading .env; a way out of the egress family only."""
    if family != "egress" or "url" not in tool.inputs:
        return []
    return [
        Variant(
            id=f"{tool.name}:url",
            family=family,
            target=target,
            route=f"{tool.name} (a URL)",
            form="-",
            tool=tool.name,
            input={**defaults, "url": f"https://{target}/?k={SECRET}"},
            tags=frozenset({"offered-tool", "tool"}),
        )
    ]


def _file_tool_variants(
    family: str, target: str, tool: OfferedTool, custom: Any, defaults: dict[str, Any], depth: str
) -> list[Variant]:
    """Through a tool that writes or reads a file: one variant per path spelling it can take."""
    path_key = custom.path if custom else next((k for k in _PATH_KEYS if k in tool.inputs), None)
    content_key = custom.content if custom else next((k for k in _CONTENT_KEYS if k in tool.inputs), None)
    wants = {"write": "write", "escape": "write", "read": "read"}.get(family)
    if path_key is None or tool.acts_as != wants:
        return []
    path = target_file(target)
    variants = []
    for form in PATH_FORMS:
        if form.shell_only or form.setup(path) or (depth != "full" and form.name not in _CURATED_FORMS):
            continue
        tool_input = {**defaults, path_key: form.spell(path)}
        if tool.acts_as == "write":
            tool_input.update(
                {content_key: PAYLOAD + "\n"} if content_key else {"old_string": FIRST_LINE, "new_string": PAYLOAD}
            )
        variants.append(
            Variant(
                id=f"{tool.name}:{path_key}:{form.name.replace(' ', '-')}",
                family=family,
                target=target,
                route=tool.name,
                form=form.name,
                tool=tool.name,
                input=tool_input,
                plant=tuple(form.plant(path)),
                tags=frozenset({"offered-tool"}),
            )
        )
    return variants


def _defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """A value for every required input (the path, content and command are set after)."""
    values = {}
    properties = schema.get("properties") or {}
    for name in schema.get("required") or []:
        spec = properties.get(name) or {}
        kind: Any = spec.get("type")  # a JSON schema type: a name, a list of names, or none
        if "enum" in spec:
            values[name] = spec["enum"][0]
        elif kind in ("integer", "number"):
            values[name] = max(spec.get("minimum", 0), min(5000, spec.get("maximum", 5000)))
        else:
            values[name] = {"boolean": False, "array": [], "object": {}}.get(kind, "controlplane")
    return values
