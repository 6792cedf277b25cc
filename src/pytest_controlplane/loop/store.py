"""SessionStore: an agent session is its messages list, saved under a name — atomically, checked, plain.

    store = SessionStore("sessions", root=workspace)
    store.save("cache-investigation", messages)
    store.fork("cache-investigation", "cache-investigation-ttl")
    store.changes("cache-investigation")   # files the session read that changed since it was saved

A session file is JSON: {"format", "name", "messages", "reads"}.  `reads` maps each file a reading
tool read (relative to `root`) to its content hash as of the save, which is how a later resume
knows the session's picture of the workspace has gone stale.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import write_atomically
from ..errors import ConfigError, SessionCorrupt, SessionFormatError, SessionNotFound, ours

__tracebackhide__ = ours  # our errors show without our frames

FORMAT = "pytest-controlplane/session-v1"
PATH_KEYS = ("path", "file_path", "filename")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# What str() of an anthropic SDK block looks like: the seed's json.dumps(..., default=str) wrote these.
_STRINGIFIED_SDK = re.compile(
    r"\b(TextBlock|ToolUseBlock|ToolResultBlock|ThinkingBlock|Message)\((citations|id|text|"
    r"type|signature|content)="
)


def check_name(name: object) -> str:
    """A session name is a file name, never a path: letters, digits, '.', '_', '-'; no '..'."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise ConfigError(
            f"Session name {name!r} is not allowed.",
            hint="Use letters, digits, '.', '_' and '-' (at most 128, starting with a letter or digit; "
            "no path separators, no '..').",
        )
    return name


def plain(value: Any, where: str = "messages") -> Any:
    """A JSON-ready copy of `value`: SDK objects (pydantic models) become dicts, here and only here."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        if _STRINGIFIED_SDK.search(value):
            raise SessionFormatError(
                f"{where} holds an SDK object turned into a string ({value[:80]!r}...).",
                hint="Store the blocks themselves (or block.model_dump()); json.dumps(..., default=str) or str() "
                "on SDK objects loses them — the model would later be sent their Python repr.",
            )
        return value
    if isinstance(value, Mapping):
        return {str(key): plain(item, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, f"{where}[{index}]") for index, item in enumerate(value)]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return plain(dump(mode="json", exclude_none=True), where)
    raise SessionFormatError(
        f"{where} is a {type(value).__name__}, which a session cannot store.",
        hint="Messages hold strings, numbers, lists and dicts (SDK blocks are converted).",
    )


def check_messages(messages: Any, where: str = "messages") -> list[dict[str, Any]]:
    """Plain messages in the Messages API's shape: a list of {"role": user|assistant, "content": str | [blocks]}."""
    if not isinstance(messages, list | tuple):
        raise SessionFormatError(f"{where} is a {type(messages).__name__}, not a list of messages.")
    result = plain(list(messages), where)
    for index, message in enumerate(result):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise SessionFormatError(
                f"{where}[{index}] is not a message with role 'user' or 'assistant': {json.dumps(message)[:120]}"
            )
        content = message.get("content")
        if not isinstance(content, str) and not (
            isinstance(content, list) and all(isinstance(b, dict) and "type" in b for b in content)
        ):
            raise SessionFormatError(
                f"{where}[{index}].content is neither a string nor a list of typed blocks: {json.dumps(content)[:120]}"
            )
    return result


@dataclass(frozen=True)
class FileChange:
    """A file a session read, and how it differs now from when the session was saved."""

    path: str
    saved_sha256: str
    now: str | None  # the content now, or None if the file is gone

    @property
    def deleted(self) -> bool:
        return self.now is None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class SessionStore:
    """Named sessions in one directory.  `root` resolves the paths reading tools name; `reading_tools`
    says which tools read files: names (the path is the input's "path", "file_path" or "filename"),
    or a mapping tool name -> input key.  By default, any tool whose name contains "read"."""

    def __init__(
        self,
        directory: Path | str,
        *,
        root: Path | str | None = None,
        reading_tools: Iterable[str] | Mapping[str, str] | None = None,
        before_replace: Callable[[], None] | None = None,
    ) -> None:
        """`before_replace` runs inside every save, after the new file is written and before it replaces the old
        one (crash tests stop there)."""
        self.directory = Path(directory)
        self.before_replace = before_replace
        self.root = Path(root) if root is not None else Path.cwd()
        if reading_tools is None or isinstance(reading_tools, Mapping):
            self.reading_tools: dict[str, str] | None = dict(reading_tools) if reading_tools is not None else None
        else:
            self.reading_tools = {name: "" for name in reading_tools}

    def path(self, name: str) -> Path:
        return self.directory / f"{check_name(name)}.json"

    def names(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(p.stem for p in self.directory.glob("*.json") if _NAME.fullmatch(p.stem))

    def exists(self, name: str) -> bool:
        return self.path(name).is_file()

    # --- saving and loading ----------------------------------------------------------------------

    def save(self, name: str, messages: Any) -> Path:
        """Write the session atomically (temp file + fsync + rename); SDK blocks are stored as plain dicts."""
        path = self.path(name)
        checked = check_messages(messages)
        record = {"format": FORMAT, "name": name, "messages": checked, "reads": self._reads(checked)}
        write_atomically(
            path, json.dumps(record, indent=1, ensure_ascii=False).encode("utf-8"), before_replace=self.before_replace
        )
        return path

    def load(self, name: str) -> list[dict[str, Any]] | None:
        """The session's messages, or None when there is no such session."""
        record = self._record(name)
        return None if record is None else record["messages"]

    def fork(self, source: str, new: str) -> Path:
        """Copy session `source` to `new`; from then on they never touch each other's file."""
        record = self._record(source)
        if record is None:
            raise SessionNotFound(
                f"Cannot fork session {source!r}: it does not exist in {self.directory}.",
                path=self.path(source),
                hint=f"Existing sessions: {', '.join(self.names()) or 'none'}.",
            )
        target = self.path(new)
        if target.exists():
            raise ConfigError(
                f"Cannot fork {source!r} into {new!r}: session {new!r} already exists.",
                hint="Pick a new name, or delete the old session first.",
            )
        record = {**record, "name": new}
        write_atomically(
            target, json.dumps(record, indent=1, ensure_ascii=False).encode("utf-8"), before_replace=self.before_replace
        )
        return target

    def changes(self, name: str) -> list[FileChange]:
        """Files the session read whose content differs now from when it was saved."""
        record = self._record(name)
        if record is None:
            return []
        changed = []
        for relative, digest in record["reads"].items():
            target = self.root / relative
            data = target.read_bytes() if target.is_file() else None
            if data is None or sha256(data) != digest:
                changed.append(FileChange(relative, digest, None if data is None else data.decode(errors="replace")))
        return changed

    # --- internals -------------------------------------------------------------------------------

    def _record(self, name: str) -> dict[str, Any] | None:
        path = self.path(name)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        fix = f"Restore it from version control, or delete {path} to start the session over."
        try:
            record = json.loads(raw)
        except ValueError as error:
            raise SessionCorrupt(
                f"Session file {path} is not valid JSON ({error}); it is torn or was written by something else.",
                path=path,
                hint=fix,
            ) from None
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            found = record.get("format") if isinstance(record, dict) else type(record).__name__
            raise SessionCorrupt(
                f"Session file {path} is not a {FORMAT} file (format: {found!r}).", path=path, hint=fix
            )
        try:
            record["messages"] = check_messages(record.get("messages"), f"{path.name}: messages")
        except SessionFormatError as error:
            raise SessionCorrupt(str(error), path=path, hint=fix) from None
        if not isinstance(record.get("reads"), dict):
            raise SessionCorrupt(f"Session file {path} has no 'reads' table.", path=path, hint=fix)
        return record

    def _reading_key(self, tool: str, tool_input: dict[str, Any]) -> str | None:
        if self.reading_tools is None:
            if "read" not in tool.lower():
                return None
            key = ""
        elif tool in self.reading_tools:
            key = self.reading_tools[tool]
        else:
            return None
        if key:
            return key if isinstance(tool_input.get(key), str) else None
        return next((k for k in PATH_KEYS if isinstance(tool_input.get(k), str)), None)

    def _reads(self, messages: list[dict[str, Any]]) -> dict[str, str]:
        """Each file a reading tool read, with its content hash now (at the save)."""
        reads: dict[str, str] = {}
        root = self.root.resolve()
        for message in messages:
            if message["role"] != "assistant" or isinstance(message["content"], str):
                continue
            for block in message["content"]:
                if block.get("type") != "tool_use" or not isinstance(block.get("input"), dict):
                    continue
                key = self._reading_key(str(block.get("name")), block["input"])
                if key is None:
                    continue
                target = (root / block["input"][key]).resolve()
                if target.is_file() and (target == root or root in target.parents):
                    reads[str(target.relative_to(root))] = sha256(target.read_bytes())
        return reads
