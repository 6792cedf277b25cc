"""A cassette: vcrpy's YAML format, read and written through vcrpy's own serializer.

On top of vcrpy it adds what an agent suite needs: request bodies stored as deltas of earlier ones
and held in memory as shared parts (linear size and load, see `delta` and `body`), an index by the
hash of the cut request (a request is matched in O(1); the normalised index and a diff are built
only on a miss; a replay on another CLI release has an index of its own, by conversation), atomic saves,
strict errors for a missing or corrupt file (vcrpy treats a corrupt file as empty and may overwrite it), and the
recording's provenance in the cassette's ``metadata``.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..atomic import write_atomically
from ..errors import CassetteCorrupt, CassetteNotFound, ours
from ..word_diff import compact
from . import delta, formats
from .body import JsonBody
from .keys import ConversationKeys, quick_key
from .matching import across_key, conversation, match_key, pretty

__tracebackhide__ = ours  # our errors show without our frames

METADATA_KEY = "controlplane"


@dataclass
class Interaction:
    method: str
    uri: str
    stored_body: bytes | JsonBody  # a delta is rebuilt as parts shared with its base, joined only when asked
    headers: dict[str, list[str]]
    response: dict[str, Any]
    plays: int = 0

    @property
    def body(self) -> bytes:
        return self.stored_body if isinstance(self.stored_body, bytes) else self.stored_body.to_bytes()

    @property
    def route(self) -> str:
        return urlsplit(self.uri).path

    @property
    def streamed(self) -> bool:
        """The request asked for a streamed answer (`"stream": true`)."""
        if isinstance(self.stored_body, JsonBody):
            return self.stored_body.fields.get("stream") is True
        try:
            value = json.loads(self.stored_body)
        except ValueError:
            return False
        return isinstance(value, dict) and value.get("stream") is True

    @property
    def key(self) -> str:
        return match_key(self.method, self.route, self.body)

    @property
    def quick_key(self) -> tuple[str, str, bytes]:
        if isinstance(self.stored_body, bytes):
            return quick_key(self.method, self.route, self.stored_body)
        return self.method.upper(), self.route, self.stored_body.digest()


@dataclass
class Cassette:
    path: Path
    interactions: list[Interaction] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Two indexes: a quick one on the raw body (hashing only), and the full normalised one, built on the
        # first request the quick one misses (another client's JSON spacing, say).
        self._quick: dict[tuple[str, str, bytes], list[int]] = defaultdict(list)
        self._index: dict[str, list[int]] | None = None
        self._across: dict[str, list[int]] | None = None  # by conversation: a replay on another CLI release
        self.normalised_matches: set[int] = set()  # found only by the normalised index (slower: reported)
        self._requests = ConversationKeys()  # keys requests resuming from the ones before: O(new bytes) each
        for position, interaction in enumerate(self.interactions):
            self._quick[interaction.quick_key].append(position)

    # --- reading -------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: Path | str) -> Cassette:
        path = Path(path)
        if not path.is_file():
            raise CassetteNotFound(f"Cassette {path} does not exist.", path=path)
        fix = f"Restore it (`git checkout -- {path}`), or delete it and record it again with `--agent-mode=record`."
        try:
            text = path.read_text(encoding="utf-8")
            if not text.strip():
                raise ValueError("the file is empty")
            data = json.loads(text) if _is_json(path, text) else _yaml().deserialize(text)
        except Exception as error:  # yaml, json, unicode: all mean the same to the user
            raise CassetteCorrupt(
                f"Cassette {path} cannot be loaded: {type(error).__name__}: {error}".rstrip(), path=path, hint=fix
            ) from error
        try:
            read, metadata = formats.read(data)
            bodies = delta.decode([body for _, _, body, _, _ in read])
        except ValueError as error:  # formats.UnknownShape, a damaged delta
            raise CassetteCorrupt(f"Cassette {path} cannot be loaded: {error}.", path=path, hint=fix) from error
        interactions = [
            Interaction(method, uri, body, headers, response)
            for (method, uri, _, headers, response), body in zip(read, bodies, strict=True)
        ]
        return cls(path, interactions, metadata)

    @property
    def provenance(self) -> dict[str, Any]:
        value = self.metadata.get(METADATA_KEY)
        return value if isinstance(value, dict) else {}

    def find(self, method: str, route: str, body: bytes, *, across_releases: bool = False) -> int | None:
        """The first not yet played interaction matching the request; `across_releases`: matching its conversation
        alone (`matching.across_key`), the request coming from another CLI release than the recording's."""
        if across_releases:
            if self._across is None:
                self._across = self._indexed(across_key)
            return self._unplayed(self._across.get(across_key(method, route, body), ()))
        position = self._unplayed(self._quick.get(self._requests.key(method, route, body), ()))
        if position is not None:
            return position
        if self._index is None:
            self._index = self._indexed(match_key)
        position = self._unplayed(self._index.get(match_key(method, route, body), ()))
        if position is not None:
            self.normalised_matches.add(position)
        return position

    def _indexed(self, key: Any) -> dict[str, list[int]]:
        index: dict[str, list[int]] = defaultdict(list)
        for position, interaction in enumerate(self.interactions):
            index[key(interaction.method, interaction.route, interaction.body)].append(position)
        return index

    def _unplayed(self, positions: Any) -> int | None:
        return next((p for p in positions if self.interactions[p].plays == 0), None)

    def play(self, position: int) -> dict[str, Any]:
        interaction = self.interactions[position]
        interaction.plays += 1
        return interaction.response

    def unused(self) -> list[int]:
        return [i for i, interaction in enumerate(self.interactions) if interaction.plays == 0]

    def closest(self, method: str, route: str, body: bytes, *, across_releases: bool = False) -> tuple[int | None, str]:
        """The recorded request most like this one, and a unified diff of the two (normalised; `across_releases`: of
        their conversations alone, as they were matched).

        Recordings are ranked by how many bytes they share with the request from its start (the same turn
        of the same conversation shares the most), then by size; only the first few are compared line by
        line, which at 300 turns takes a tenth of comparing them all."""
        if not self.interactions:
            return None, ""
        view = _conversation_bytes if across_releases else bytes
        body = view(body)
        bodies = {p: view(i.body) for p, i in enumerate(self.interactions) if i.route == route}
        ranked = sorted(
            bodies,
            key=lambda p: (
                -_shared_prefix(body, bodies[p]),
                abs(len(bodies[p]) - len(body)),
                self.interactions[p].plays != 0,
            ),
        )
        wanted = pretty(body).splitlines()
        best, best_ratio, recorded = 0, -1.0, None
        for position in ranked[:4]:
            lines = pretty(bodies[position]).splitlines()
            ratio = difflib.SequenceMatcher(None, wanted, lines, autojunk=False).quick_ratio()
            ratio += 0.001 * (self.interactions[position].plays == 0)  # prefer the one that is still to be played
            if ratio > best_ratio:
                best, best_ratio, recorded = position, ratio, lines
        if recorded is None:  # nothing recorded on this path: show the first interaction
            recorded = pretty(view(self.interactions[0].body)).splitlines()
        diff = difflib.unified_diff(
            recorded, wanted, f"recorded interaction #{best}", "request sent now", lineterm="", n=2
        )
        return best, "\n".join(compact(diff))

    # --- writing -------------------------------------------------------------------------------

    def add(self, interaction: Interaction) -> int:
        self.interactions.append(interaction)
        position = len(self.interactions) - 1
        self._quick[interaction.quick_key].append(position)
        if self._index is not None:
            self._index[interaction.key].append(position)
        if self._across is not None:
            self._across[across_key(interaction.method, interaction.route, interaction.body)].append(position)
        return position

    def save(self) -> None:
        """Write the cassette atomically: a crash leaves the old file or the new one, never half."""
        from vcr.request import Request
        from vcr.serialize import serialize
        from vcr.serializers import jsonserializer, yamlserializer

        # Bodies are stored as deltas of earlier ones where that is smaller (see cassette.delta): linear size.
        bodies = delta.encode([i.stored_body for i in self.interactions])
        requests = [
            Request(i.method, i.uri, body, {k: v[0] if len(v) == 1 else v for k, v in i.headers.items()})
            for i, body in zip(self.interactions, bodies, strict=True)
        ]
        data: dict[str, Any] = {"requests": requests, "responses": [i.response for i in self.interactions]}
        if self.metadata:
            data["metadata"] = self.metadata
        text = serialize(data, jsonserializer if self.path.suffix == ".json" else yamlserializer)
        write_atomically(self.path, text.encode("utf-8"))


def _is_json(path: Path, text: str) -> bool:
    """vcrpy's JSON serializer (`.json`, or a file that is a JSON object whatever its name)."""
    return path.suffix == ".json" or text.lstrip().startswith("{")


def _conversation_bytes(body: bytes) -> bytes:
    """A body as its conversation (`matching.conversation`), in JSON: what a diff across CLI releases compares."""
    return json.dumps(conversation(body), ensure_ascii=False).encode()


def _shared_prefix(one: bytes, other: bytes) -> int:
    """How many bytes the two start with alike (a binary search of memcmp calls)."""
    low, high, view = 0, min(len(one), len(other)), memoryview(other)
    while low < high:
        middle = (low + high + 1) // 2
        if one.startswith(view[:middle]):
            low = middle
        else:
            high = middle - 1
    return low


@functools.cache
def _yaml() -> Any:
    """vcrpy's safe cassette loader, building the maps, lists and strings a cassette is made of directly rather
    than through PyYAML's generic constructor (a third less time per load); every other tag goes the usual way."""
    import yaml
    from vcr.serializers import yamlserializer

    plain = {"tag:yaml.org,2002:str": None, "tag:yaml.org,2002:map": dict, "tag:yaml.org,2002:seq": list}

    class Loader(yamlserializer._CassetteLoader):
        def construct_document(self, node: Any) -> Any:
            return self._plain(node)

        def _plain(self, node: Any) -> Any:
            kind = plain.get(node.tag, False)
            if kind is None:
                return node.value
            if kind is dict:
                return {self._plain(key): self._plain(value) for key, value in node.value}
            if kind is list:
                return [self._plain(value) for value in node.value]
            return self.construct_object(node, deep=True)

    class Serializer:
        @staticmethod
        def deserialize(text: str) -> Any:
            return yaml.load(text, Loader=Loader)  # noqa: S506 - vcrpy's safe loader

    return Serializer()
