"""Canaries: secrets planted for a test, and the search for every place they leaked to.

    canary = Canary.mint("tests/test_x.py::test_y", "API_KEY")
    canary.plant_file(workspace / ".env")               # API_KEY=cp-canary-...
    ...                                                 # the agent runs
    canary.assert_not_leaked(agent_session)             # requests, responses, SDK stream, files, logs, cassette

A value is `cp-canary-` and 24 base-36 characters (~124 bits), derived from the test's node id
and the canary's name, so a recorded and a replayed run plant the same value.  Reports never
print a value whole: `cp-canary-k3f9…`.
"""

from __future__ import annotations

import hashlib
import os
import secrets as random_source
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ControlPlaneFailure, ours
from .masking import PREFIX, redact
from .needles import DEFAULT_MIN_FRAGMENT
from .scan import Hit, Scanner
from .surfaces import Surface, surfaces_of

__tracebackhide__ = ours  # our errors show without our frames

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_SECRET_LENGTH = 24
_CONTEXT = 24  # bytes of context each side of a find in a snippet


@dataclass(frozen=True)
class Leak:
    """One place a canary was found: the surface, where in it, in what form, and a redacted snippet."""

    canary: str  # the canary's name
    surface: str  # the surface kind: request, response, sdk message, file, ...
    where: str  # "request #3, messages[4].content[0].content", "file notes.md, line 2"
    encoding: str  # "raw", "base64", "hex, with separators ... inserted", ...
    snippet: str  # the text around it, every canary replaced by «NAME canary»

    def __str__(self) -> str:
        return f"{self.where}: {self.canary} canary, {self.encoding} — {self.snippet}"


class CanaryLeaked(ControlPlaneFailure):
    """A canary was found where it must not be; `.leaks` lists each place."""

    def __init__(self, message: str, leaks: list[Leak]) -> None:
        super().__init__(message)
        self.leaks = leaks


@dataclass
class Plantings:
    """What the canaries of one test planted, shared with the agent session that runs it."""

    env: dict[str, str] = field(default_factory=dict)  # variables every agent run of the test gets
    secrets: list[str] = field(default_factory=list)  # values no report may show
    files: list[str] = field(default_factory=list)  # files planted (the leak there is the test's own doing)
    canaries: list[Canary] = field(default_factory=list)  # every canary minted for the test (reports use them)
    workspace: Path | None = None  # where relative paths are planted (set by agent_session)


class Canary:
    """A secret to plant and look for.  Calling it mints a sibling: `canary_secret("DB_PASSWORD")`."""

    def __init__(
        self,
        value: str,
        *,
        name: str = "canary",
        prefix: str = "",
        plantings: Plantings | None = None,
        min_fragment: int = DEFAULT_MIN_FRAGMENT,
        seed: str = "",
        pinned: bool = True,
    ) -> None:
        if len(value) < 16:
            raise ConfigError(
                f"A canary value needs 16+ characters to be found without false alarms; {name!r} has {len(value)}."
            )
        self.value = value
        self.name = name
        self.prefix = prefix if value.startswith(prefix) else ""
        self.plantings = plantings if plantings is not None else Plantings()
        self.min_fragment = min_fragment
        self._seed, self._pinned = seed, pinned
        self.family: list[Canary] = [self]
        self.plantings.secrets.append(value)
        self.plantings.canaries.append(self)

    @classmethod
    def mint(
        cls,
        seed: str,
        name: str = "canary",
        *,
        prefix: str = PREFIX,
        pinned: bool = True,
        plantings: Plantings | None = None,
        min_fragment: int = DEFAULT_MIN_FRAGMENT,
    ) -> Canary:
        """A value derived from `seed` (a test's node id) and `name`; `pinned=False` draws a random one instead."""
        if pinned:
            number = int.from_bytes(hashlib.sha256(f"{seed}\0{name}".encode()).digest(), "big")
        else:
            number = random_source.randbits(256)
        secret = ""
        for _ in range(_SECRET_LENGTH):
            number, digit = divmod(number, len(_ALPHABET))
            secret += _ALPHABET[digit]
        return cls(
            prefix + secret,
            name=name,
            prefix=prefix,
            plantings=plantings,
            min_fragment=min_fragment,
            seed=seed,
            pinned=pinned,
        )

    def __call__(self, name: str, *, prefix: str = PREFIX, pinned: bool | None = None) -> Canary:
        """Another canary of the same test, named `name` (its value derived from the test and the name)."""
        if any(member.name == name for member in self.family):
            raise ConfigError(f"This test already has a canary named {name!r}; give each one its own name.")
        sibling = Canary.mint(
            self._seed,
            name,
            prefix=prefix,
            pinned=self._pinned if pinned is None else pinned,
            plantings=self.plantings,
            min_fragment=self.min_fragment,
        )
        self.family.append(sibling)
        return sibling

    @property
    def secret(self) -> str:
        """The value without its public prefix (fragments of this part count as leaks)."""
        return self.value[len(self.prefix) :]

    @property
    def redacted(self) -> str:
        return f"{self.value[: len(self.prefix) + 4]}…"

    def __repr__(self) -> str:
        return f"<Canary {self.name}: {self.redacted}>"

    __str__ = __repr__

    # --- planting ------------------------------------------------------------------------------

    def text(self, template: str = "{canary}") -> str:
        """`template` with the value in it: for a prompt, a tool's return value, an MCP server's answer."""
        return template.format(canary=self.value)

    def plant_env(self, variable: str, env: dict[str, str] | None = None) -> str:
        """Give the agent the value in `variable` (every run of this test's agent_session), or set it in `env`."""
        (self.plantings.env if env is None else env)[variable] = self.value
        return self.value

    def plant_file(self, path: str | os.PathLike[str], template: str = "API_KEY={canary}\n") -> Path:
        """Write `template` with the value to `path` (relative: in the agent's workspace); that file may hold it."""
        target = Path(path)
        if not target.is_absolute():
            if self.plantings.workspace is None:
                raise ConfigError(
                    f"plant_file({os.fspath(path)!r}): a relative path needs the agent's workspace.",
                    hint="Use the agent_session fixture in the same test, or pass an absolute path.",
                )
            target = self.plantings.workspace / target
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.text(template))
        self.plantings.files.append(os.path.realpath(target))
        return target

    # --- finding -------------------------------------------------------------------------------

    def find(self, *sources: Any) -> list[Leak]:
        """Every place this canary (and, for a test's first canary, its siblings) appears in `sources`.

        A source is an agent_session (all its surfaces), text, bytes, a Path, a Surface, or a list of them.
        """
        return find_all(self.family, *sources)

    def assert_not_leaked(self, *sources: Any, allow: Iterable[str | os.PathLike[str]] = ()) -> None:
        """Fail with every leak found, except on allowed surfaces: kinds ("transcript", "file", ...) or file paths.
        Files the canary was planted in are allowed."""
        __tracebackhide__ = True
        allowed = [os.fspath(a) for a in allow]
        leaks = [
            leak for leak, surface in _find_with_surfaces(self.family, sources) if not self._allowed(surface, allowed)
        ]
        if leaks:
            names = ", ".join(m.name for m in self.family)
            lines = [f"Canary {names} leaked to {len(leaks)} place(s):"]
            lines.extend(f"  {leak}" for leak in leaks)
            raise CanaryLeaked(redact("\n".join(lines), self.plantings.secrets), leaks)

    def _allowed(self, surface: Surface, allowed: list[str]) -> bool:
        if surface.kind in allowed:
            return True
        if surface.path is None:
            return False
        real = os.path.realpath(surface.path)
        return real in self.plantings.files or any(
            real
            == os.path.realpath(
                a if os.path.isabs(a) or self.plantings.workspace is None else self.plantings.workspace / a
            )
            for a in allowed
        )


def find_leaks(value: str, data: str | bytes, *, min_fragment: int = DEFAULT_MIN_FRAGMENT) -> list[Leak]:
    """Every place `value` appears in `data`, in any encoding the scanner knows."""
    canary = Canary(value, name="secret", prefix=PREFIX, min_fragment=min_fragment)
    return canary.find(data)


def find_all(canaries: list[Canary], *sources: Any) -> list[Leak]:
    """Every place any of `canaries` appears in `sources`, in one pass per surface."""
    return [leak for leak, _ in _find_with_surfaces(canaries, sources)]


def _find_with_surfaces(family: list[Canary], sources: tuple[Any, ...]) -> list[tuple[Leak, Surface]]:
    if not sources:
        raise ConfigError(
            "find()/assert_not_leaked() needs something to search: an agent_session, text, bytes or a Path."
        )
    scanner = Scanner([(c.value, c.secret) for c in family], min_fragment=min(c.min_fragment for c in family))
    found: list[tuple[Leak, Surface]] = []
    for surface in surfaces_of(list(sources)):
        hits = scanner.scan(surface.data)
        for hit in hits:
            where = f"{surface.name}, {surface.locate(hit.start)}"
            found.append(
                (
                    Leak(
                        family[hit.canary].name, surface.kind, where, hit.encoding, _snippet(surface, hit, hits, family)
                    ),
                    surface,
                )
            )
    return found


def _snippet(surface: Surface, hit: Hit, hits: list[Hit], family: list[Canary]) -> str:
    """The find with some context from its own field or line, every canary in it replaced by its name."""
    data = surface.data
    first, last = surface.bounds(hit.start)
    first, last = min(first, hit.start), max(last, hit.end)  # a find across lines keeps its whole span
    start, end = max(first, hit.start - _CONTEXT), min(last, hit.end + _CONTEXT)
    shown = sorted((h for h in hits if h.end > start and h.start < end), key=lambda h: h.start)
    # a find across either edge of the window is named whole: the window widens to take it in
    start, end = min([start, *(h.start for h in shown)]), max([end, *(h.end for h in shown)])
    pieces, cursor = [], start
    for other in shown:
        if other.start < cursor:
            cursor = max(cursor, other.end)
            continue
        pieces.append(data[cursor : other.start].decode("utf-8", "replace"))
        pieces.append(f"«{family[other.canary].name} canary»")
        cursor = other.end
    pieces.append(data[cursor:end].decode("utf-8", "replace") if cursor < end else "")
    text = "".join(pieces).replace("\n", "⏎")
    return ("…" if start > first else "") + text + ("…" if end < last else "")
