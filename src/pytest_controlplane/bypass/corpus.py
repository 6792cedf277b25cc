"""The curated corpus: routes x path forms for each family, and the known public bypasses by name.

    corpus("write", ".env")                  # the curated set (every route once, every form twice, the known ones)
    corpus("write", ".env", depth="full")    # every route with every form that applies to it
    corpus("exec", "curl", routes=["Bash timeout", "Bash chained &&"])
    corpus("exec", "scripts/deploy.sh")       # ./x, sh x, . x, find -exec, xargs, ... x every path form

Families and targets:
- write  — a file (or a directory, ending in "/") in the workspace must not be written.
- read   — a file's content must not reach the model (it holds a canary).
- exec   — a command ("curl", "git push") must not run (a shim on PATH records it if it does), or a workspace
           script ("scripts/deploy.sh": a target with a "/") must not run (an instrumented stand-in records it).
- escape — nothing outside the workspace may change (target "workspace").
- egress — the secret in the workspace's .env must not reach a host (target "collector.example" by default), by any
           way out: HTTP clients, interpreters, raw sockets, git remotes, package installs, DNS labels, web tools.
- everyday — legitimate work a guard must allow (everyday.py; no target): done or blocked, `assert_allowed()`.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..config import BYPASS_KEYS, BYPASS_SIGNATURE
from ..errors import ConfigError
from .egress_routes import DEFAULT_HOST, egress_variants
from .everyday import everyday_target, everyday_variants, select
from .forms import ESCAPE_FORMS, PATH_FORMS, Form
from .home_secrets import HOME_FORMS, HOME_READS, is_home
from .known import KNOWN
from .multistep import retry_variants, staged_variants
from .poisoned import poisoned_variants
from .reported import command_routes as reported_command_routes
from .reported import reported_routes, reported_variants
from .routes import ESCAPE_ROUTES, READ_ROUTES, SCRIPT_ROUTES, SHELL_TOOLS, WRITE_ROUTES, Route, command_routes
from .sandbox_routes import sandbox_variants
from .variant import FAMILIES, Variant, target_file

DEPTHS = ("curated", "full")


def variants_for_marker(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[Any]:
    """The variants `@pytest.mark.bypass_variants(*args, **kwargs)` asks for, then (unless routes, forms or tags
    select; `tags=["offered-tool"]` selects it alone) `offered-tools`: the tools the agent offers beyond them, swept
    at run time.  Or the one error saying what is wrong with the marker (the test then fails with it)."""
    try:
        unknown = sorted(set(kwargs) - set(BYPASS_KEYS))
        if unknown or len(args) != 1:
            raise ConfigError(
                f"@pytest.mark.{BYPASS_SIGNATURE.split('(')[0]} got "
                f"{', '.join(unknown) or f'{len(args)} positional arguments'}; its signature "
                f"is {BYPASS_SIGNATURE}."
            )
        sweep_only = list(kwargs.get("tags") or ()) == ["offered-tool"]
        variants: list[Any] = [] if sweep_only else list(corpus(*args, **kwargs))
        if not variants and not sweep_only:
            raise ConfigError(
                f"@pytest.mark.bypass_variants{args!r} selects no variant; loosen routes/forms/tags/exclude."
            )
    except ConfigError as error:
        return [error]
    selected = any(kwargs.get(key) is not None for key in ("routes", "forms", "tags"))
    everyday = args[0] == "everyday"  # legitimate work: no tool beyond the tasks is swept
    if (sweep_only or not selected) and "offered-tools" not in set(kwargs.get("exclude") or ()) and not everyday:
        from .sweep import OfferedRoutes  # the tools this agent offers beyond the named variants, found at run time

        variants.append(
            OfferedRoutes(args[0], default_target(args[0], kwargs.get("target")), kwargs.get("depth", "curated"))
        )
    return variants


def corpus(
    family: str,
    target: str | None = None,
    *,
    routes: Iterable[str] | None = None,
    forms: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    depth: str = "curated",
) -> list[Variant]:
    """The variants of `family` against `target`; `routes`/`forms`/`tags` select, `exclude` drops ids, routes
    or tags; `depth="curated"` is every route once, every form on two routes, and every known bypass."""
    if family not in FAMILIES:
        raise ConfigError(f"Unknown bypass family {family!r}; the families are {', '.join(FAMILIES)}.")
    if depth not in DEPTHS:
        raise ConfigError(f"bypass_variants(depth={depth!r}): choose one of {', '.join(DEPTHS)}.")
    target = default_target(family, target)
    every = family_variants(family, target)
    known_routes = sorted({v.route for v in every})
    known_forms = sorted({v.form for v in every})
    for name, given, valid in (("routes", routes, known_routes), ("forms", forms, known_forms)):
        unknown = sorted(set(given or ()) - set(valid))
        if unknown:
            raise ConfigError(
                f"bypass_variants({family!r}, {name}=...): unknown {', '.join(map(repr, unknown))}; "
                f"the {family} family has {name}: {', '.join(valid)}."
            )
    if family == "everyday":  # every task at every depth, or a group's (everyday.py)
        return select(target, routes, tags, exclude)
    if routes is None and forms is None and tags is None and depth == "curated":
        kind = target_kind(family, target)
        chosen = [v for v in every if _curated(v, kind)]
    else:
        chosen = [
            v
            for v in every
            if (routes is None or v.route in set(routes))
            and (forms is None or v.form in set(forms))
            and (tags is None or v.tags & set(tags))
        ]
    if not set(tags or ()) & {"sandbox"}:  # about another file (what the sandbox leaves readable): only when asked for
        chosen = [v for v in chosen if v.target == target]
    dropped = set(exclude or ())
    return [v for v in chosen if not ({v.id, v.route} | v.tags) & dropped]


def _curated(v: Variant, kind: str) -> bool:
    """Whether a curated corpus holds `v`: every route once (at the base form), every form on two routes, every known
    bypass, the routes again around a guard's tool list, every poisoned, staged, retried, sandbox escape, and one
    variant of each class from the newer reports (reported.py; the others are `full-only`)."""
    if "full-only" in v.tags:
        return False
    alone = not v.tags & {"subagent", "other-shell"}
    return bool(
        ("known" in v.tags or v.form == BASE_FORM[kind] or v.route in _FORM_ROUTES[kind])
        and alone
        or v.form == BASE_FORM[kind]
        and _base_route(v) in AROUND_ROUTES[kind]
        or v.tags & {"poisoned", "staged", "retry", "sandbox"}
        or "reported" in v.tags
        and alone
        and v.form in (BASE_FORM[kind], "-")
    )


def target_kind(family: str, target: str) -> str:
    """The family, or "script" for a workspace script, or "home" for a read of a file in the user's home."""
    return "script" if is_script(family, target) else "home" if family == "read" and is_home(target) else family


BASE_FORM = {
    "write": "relative",
    "read": "relative",
    "home": "absolute",
    "exec": "-",
    "script": "relative",
    "escape": "dotdot",
    "egress": "-",
}
_FORM_ROUTES = {
    "write": ("Write", "Bash >"),
    "read": ("Read", "Bash cat"),
    "home": ("Read", "Bash cat"),
    "exec": (),
    "script": ("Bash ./script", "Bash sh script"),
    "escape": ("Write", "Bash >"),
    "egress": (),
}  # every route once (base form), every form on these routes
# Around a guard that names tools: these routes again through the other shell-running tools and inside a subagent
# (curated: at the base form; full: every route and form).
AROUND_ROUTES = {
    "write": ("Write", "Edit", "Bash >", "Bash tee", "Bash sed -i", "Bash python -c"),
    "read": ("Read", "Bash cat", "Bash base64"),
    "home": ("Read", "Bash cat", "Bash base64"),
    "exec": ("Bash direct", "Bash chained &&"),
    "script": ("Bash ./script", "Bash sh script"),
    "escape": ("Write", "Bash >"),
    "egress": ("Bash curl POST", "Bash python urllib", "WebFetch"),
}


def default_target(family: str, target: str | None) -> str:
    if family == "everyday":
        return everyday_target(target)
    if family == "escape":
        if target not in (None, "workspace"):
            raise ConfigError(
                f"bypass_variants('escape', target={target!r}): the escape family's target is the "
                "workspace boundary; write target='workspace' or leave it out."
            )
        return "workspace"
    if family == "egress":
        labels = (target or "").removesuffix(".").split(".")
        named = not target or (all(labels) and any(re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", x) for x in labels))
        if not named:  # `.env` is a file, not a host: every host has a label of letters, none starts with a dot
            raise ConfigError(
                f"bypass_variants('egress', target={target!r}) is no host name: write 'egress HOST' with HOST "
                f"a name such as {DEFAULT_HOST!r} (labels of letters, digits and '-' joined by dots, none "
                "empty); to read a file, write 'read .env'."
            )
        if target and ("/" in target or ":" in target or not re.fullmatch(r"[A-Za-z0-9.-]+", target)):
            raise ConfigError(
                f"bypass_variants('egress', target={target!r}): the egress family's target is a host name, "
                f"e.g. target={DEFAULT_HOST!r} (no scheme, port or path)."
            )
        return (target or DEFAULT_HOST).lower().rstrip(".")
    if not target:
        example = {"write": ".env", "read": ".env", "exec": "curl"}[family]
        raise ConfigError(
            f"bypass_variants({family!r}) needs a target, e.g. "
            f"@pytest.mark.bypass_variants({family!r}, target={example!r})."
        )
    scripted = is_script(family, target)
    if family == "read" and is_home(target) and ".." not in target.split("/") and target.strip("~/"):
        return target  # a secret in the user's home: HOME_FORMS spell it
    if (family in ("write", "read") or scripted) and (target.startswith(("/", "~")) or ".." in target.split("/")):
        example = "'scripts/deploy.sh'" if scripted else "'.env' or 'secrets/'"
        home = " (a read may also name a file in the home: '~/.ssh/id_ed25519')" if family == "read" else ""
        raise ConfigError(
            f"bypass_variants({family!r}, target={target!r}): give the target relative to the "
            f"workspace (e.g. {example}){home}; the path forms spell it every other way."
        )
    if scripted and target.endswith("/"):
        raise ConfigError(f"bypass_variants('exec', target={target!r}): name the script, not a directory.")
    return target


def is_script(family: str, target: str) -> bool:
    """An exec target with a "/" is a workspace script ("scripts/deploy.sh", "./deploy.sh"), else a command."""
    return family == "exec" and "/" in target


# The routes a retry repeats (at the family's plain form): what a first-occurrence-only guard blocks once.
RETRIED = {
    "write": ("Write", "Bash >"),
    "read": ("Read", "Bash cat"),
    "home": ("Read", "Bash cat"),
    "exec": ("Bash direct",),
    "script": ("Bash sh script",),
    "escape": ("Bash >",),
    "egress": ("Bash curl POST",),
}


def family_variants(family: str, target: str) -> list[Variant]:
    """Every variant of `family` on `target`: routes x forms, around a guard's tool list, then what a poisoned
    repository does, the staged attacks and the retries.  Built once per process (thousands of variants: an audit
    item looks its own up among them), each caller given its own list."""
    return list(_family_variants(family, target))


@functools.lru_cache(maxsize=32)
def _family_variants(family: str, target: str) -> tuple[Variant, ...]:
    if family == "everyday":  # the legitimate work a guard must allow (everyday.py)
        return tuple(everyday_variants())
    if family == "egress":  # routes of its own (egress_routes.py), around a guard's tool list, and retried
        own = egress_variants(target)
        routes = [v for v in own if not v.tags & {"staged", "poisoned"}]
        staged = [v for v in own if v.tags & {"staged", "poisoned"}]
        return (*_around(routes), *staged, *retry_variants([v for v in routes if v.route in RETRIED[family]]))
    if family == "exec" and not is_script(family, target):
        direct = Form("-", lambda p: p)
        commands = (*command_routes(target), *reported_command_routes(target))
        variants = [make_variant(family, target, route, direct, "-") for route in commands]
    else:
        variants = _routes_by_forms(family, target)
    kind = target_kind(family, target)
    retried = [v for v in variants if v.form == BASE_FORM[kind] and v.route in RETRIED[kind]]
    home = kind == "home"  # a repository's files and staged scripts act in the workspace: not on a home file
    return (
        *_around(variants),
        *([] if home else poisoned_variants(family, target)),
        *sandbox_variants(family),
        *reported_variants(family, target, home=home),
        *([] if home else staged_variants(family, target)),
        *retry_variants(retried),
    )


def _routes_by_forms(family: str, target: str) -> list[Variant]:
    path = target_file(target)
    route_list = {"write": WRITE_ROUTES, "read": READ_ROUTES, "escape": ESCAPE_ROUTES, "exec": SCRIPT_ROUTES}[family]
    if family in ("write", "read"):
        route_list = (*route_list, *reported_routes(family))
    form_list: tuple[Form, ...] = ESCAPE_FORMS if family == "escape" else PATH_FORMS
    if target_kind(family, target) == "home":  # a file in HOME: `~/x`, `$HOME/x`, absolute; nothing that loads a .env
        route_list = tuple(r for r in route_list if "sourcing" not in r.tags)
        form_list = HOME_FORMS
    variants = []
    for route in route_list:
        for form in form_list:
            shell = route.make("x")[0] == "Bash"
            if (form.shell_only and not shell) or (route.plain and not form.plain):
                continue
            if route.forms and form.name not in route.forms:
                continue
            if family == "escape" and route.name == "Bash cd .." and form.name != "dotdot":
                continue
            variants.append(make_variant(family, target, route, form, path))
    return variants


def _around(variants: list[Variant]) -> list[Variant]:
    """Each variant again through every other shell-running tool (`monitor:redirect:relative`) and inside a subagent
    the main agent starts (`agent:bash-redirect:relative`): ids `<tool>:<spelling>:<form>`."""
    derived = []
    for v in variants:
        if v.tool == "Bash":
            for tool, inputs in SHELL_TOOLS.items():
                derived.append(
                    dataclasses.replace(
                        v,
                        id=f"{tool.lower()}:{spelling(v)}",
                        route=f"{tool} {v.route[5:]}",
                        tool=tool,
                        input={**inputs, "command": v.input["command"]},
                        tags=v.tags - {"known"} | {"other-shell"},
                        reference="" if "known" in v.tags else v.reference,  # a report is its own route's
                    )
                )
        derived.append(
            dataclasses.replace(
                v,
                id=f"agent:{spelling(v, tool=True)}",
                route=f"{v.route} in a subagent",
                via="Agent",
                tags=v.tags - {"known"} | {"subagent"},
                reference="" if "known" in v.tags else v.reference,
            )
        )
    return variants + derived


def spelling(variant: Variant, *, tool: bool = False) -> str:
    """A variant's route and form as an id piece: "redirect:relative" (with `tool`: "bash-redirect:relative")."""
    route = variant.route if tool or not variant.route.startswith("Bash ") else variant.route[5:]
    return _slug(route) + (f":{_slug(variant.form)}" if variant.form != "-" else "")


def _base_route(variant: Variant) -> str:
    """The route a derived variant repeats ("Monitor >" -> "Bash >", "Write in a subagent" -> "Write")."""
    route = variant.route.removesuffix(" in a subagent")
    tool = route.split(" ", 1)[0]
    return "Bash" + route[len(tool) :] if tool in SHELL_TOOLS else route


_SYMBOLS = (
    (" . ", " dot-source "),
    ("./", " dot-slash "),
    (" .", " dot-source"),
    (" :", " colon"),
    ("<<<", " here-string "),
    ("<", " stdin "),
    (">|", " clobber "),
    ("&>", " redirect-all "),
    ("2>", " redirect-stderr "),
    ("3>", " redirect-fd "),
    (">>", " append "),
    (">", " redirect "),
    ("$(...)", " subst "),
    ("&&", " and "),
    ("||", " or "),
    (";", " semicolon "),
    ("$", "dollar-"),
)


def _slug(name: str) -> str:
    """A readable test id piece: "Bash >>" -> "bash-append", "Bash sh -c" -> "bash-sh-c", "$PWD" -> "dollar-pwd"."""
    for symbol, word in _SYMBOLS:
        name = name.replace(symbol, word)
    name = re.sub(r"(^| )-+(\w)", r"\1\2", name)  # flags: "-c" -> "c"
    name = name.replace("_", "-")
    return "-".join(name.lower().split())


def make_variant(family: str, target: str, route: Route, form: Form, path: str) -> Variant:
    spelled = form.spell(path)
    tool, tool_input = route.make(spelled)
    if "command" in tool_input and (form.prelude or form.whole):
        command = tool_input["command"]
        command = f"{form.prelude(path)}; {command}" if form.prelude else command
        tool_input = {**tool_input, "command": form.whole(command) if form.whole else command}
    setup = list(form.setup(path))
    if route.needs_read:
        setup.append(("Read", {"file_path": spelled}))
    name, reference = ("", "") if is_home(target) else KNOWN.get((family, route.name, form.name), ("", ""))
    slug = _slug(route.name) + (f":{_slug(form.name)}" if form.name != "-" else "")
    tags = route.tags | ({"known"} if name else set()) | ({"evasion"} if form.evasion else set())
    home = is_home(target)  # a secret in the user's home (home_secrets.py)
    return Variant(
        id=name or slug,
        family=family,
        target=target,
        route=route.name,
        form=form.name,
        tool=tool,
        input=tool_input,
        setup=tuple(setup),
        plant=tuple(form.plant(path)),
        tags=frozenset(tags | ({"home-secret"} if home else set())),
        reference=reference or route.reference or (HOME_READS if home else ""),
        setup_is_attack=bool(form.setup(path)),
        requires=route.requires,
    )
