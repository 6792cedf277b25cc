"""What a report shows instead of a secret: a canary as «canary», any other secret value as «secret, id 3f9a1c2b»
(8 hex digits of an HMAC of the value under this machine's mask key, mask_key.py: enough to tell two apart, and for
whoever holds the key to check one by hand with `controlplane secret-id`; neither the value nor its length, nor
anything a guess can be checked against without the key).  An encoded copy is masked too, its encoding named
(«secret, id 3f9a1c2b, base64»): every form the canary scanner finds (scan.py: base64 and base32 at every alignment,
hex, reversed, rot13, percent and `\\u` escapes, separators or whitespace between the characters as `od -c` prints
them, fragments of 12 characters and more, and byte dumps whose lines cut the value apart).

The secrets are the test's canaries and the values of the workspace's secret files: `.env`-style files by default
(`.env`, `.env.local`, `prod.env`, anything under a `secrets/` folder), the file a bypass family protects, and the files
a test names with `effects.redact_file(path)`.  A file's values are those of its `KEY=value` lines, or its lines.
"""

from __future__ import annotations

import fnmatch
import functools
import hmac
import json
import re
from collections.abc import Iterable
from typing import Any

from .mask_key import key

PREFIX = "cp-canary-"  # every canary's value starts so
# Names of files whose values are secret by default (matched against the file's name, or any folder above it).
SECRET_NAMES = (".env", ".env.*", "*.env", "credentials.json", "*.pem", "*.key", "id_rsa", "id_ed25519", "id_ecdsa")
SECRET_FOLDERS = ("secrets",)
MIN_LENGTH = 6  # shorter values (a port, "yes") are not worth hiding and would mask half a report
_HARMLESS = frozenset({"true", "false", "null", "none", "localhost", "development", "production", "staging"})
_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*[=:]\s*(.*?)\s*$")


def mask(value: str) -> str:
    """«canary» or «secret, id 3f9a1c2b»: what is shown instead of `value`.

    The id is keyed: an unkeyed digest (with the length, as masks once showed) lets anyone holding a report check
    guesses at a weak secret offline."""
    if value.startswith(PREFIX):
        return "«canary»"
    digest = hmac.new(key(), value.encode("utf-8", "surrogatepass"), "sha256").hexdigest()
    return f"«secret, id {digest[:8]}»"


def redact(text: str, values: Iterable[str]) -> str:
    """`text` with each secret value in it masked, raw or in any encoding the canary scanner knows."""
    found = tuple(sorted({v for v in values if v}))
    if not found or not text:
        return text
    data = text.encode("utf-8", "surrogatepass")
    hits = sorted(_scanner(found).scan(data), key=lambda hit: (hit.start, -hit.end))
    if not hits:
        return text
    parts, position = [], 0
    for hit in hits:
        if hit.end <= position:
            continue  # inside a span already masked
        parts.append(data[position : max(position, hit.start)])
        parts.append(_masked(found[hit.canary], hit.encoding).encode())
        position = hit.end
    parts.append(data[position:])
    return b"".join(parts).decode("utf-8", "replace")


def _masked(value: str, encoding: str) -> str:
    """The mask of a find: the value's, with its encoding named unless it is the value as is."""
    family = encoding.split(",")[0].split(" (")[0]
    if encoding.endswith("in a byte dump"):
        family = "byte dump" if family in ("raw", "case-folded") else f"{family} in a byte dump"
    shown = mask(value)
    return shown if family in ("raw", "case-folded") else f"{shown[:-1]}, {family}»"


def _strings(data: Any) -> list[str] | None:
    """Every string value in a JSON document (None: it is not an object or a list)."""
    if isinstance(data, dict):
        return [s for value in data.values() for s in (_strings(value) or ([value] if isinstance(value, str) else []))]
    if isinstance(data, list):
        return [s for value in data for s in (_strings(value) or ([value] if isinstance(value, str) else []))]
    return None


@functools.lru_cache(maxsize=32)
def _scanner(values: tuple[str, ...]) -> Any:
    from .scan import Scanner

    return Scanner([(value, value.removeprefix(PREFIX)) for value in values])


def is_secret_file(relative: str) -> bool:
    """Whether a workspace path (relative, with `/`) is a secret file by default."""
    parts = relative.split("/")
    return any(fnmatch.fnmatch(parts[-1], pattern) for pattern in SECRET_NAMES) or any(
        folder in parts[:-1] for folder in SECRET_FOLDERS
    )


def file_secrets(content: bytes) -> list[str]:
    """The values a secret file holds: each `KEY=value` line's value (unquoted), else each line; short or harmless
    ones left out."""
    text = content.decode("utf-8", "replace")
    if "\0" in text:
        return []  # binary: nothing to find in a report's text
    try:
        strings = _strings(json.loads(text))  # a JSON file (credentials.json): its string values
    except ValueError:
        strings = None
    if strings is not None:
        return [v for v in strings if len(v) >= MIN_LENGTH and v.lower() not in _HARMLESS]
    values = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found = _ASSIGNMENT.match(line)
        value = (found.group(1) if found else line).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if len(value) >= MIN_LENGTH and value.lower() not in _HARMLESS:
            values.append(value)
    return values
