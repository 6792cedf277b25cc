"""What a report shows instead of a secret: a canary as «canary», any other secret value as «secret: N chars, #hash»
(its length and the start of its sha256, enough to tell two apart and to check one by hand, never the value).

The secrets are the test's canaries and the values of the workspace's secret files: `.env`-style files by default
(`.env`, `.env.local`, `prod.env`, anything under a `secrets/` folder), the file a bypass family protects, and the files
a test names with `effects.redact_file(path)`.  A file's values are those of its `KEY=value` lines, or its lines.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable

PREFIX = "cp-canary-"  # every canary's value starts so
# Names of files whose values are secret by default (matched against the file's name, or any folder above it).
SECRET_NAMES = (".env", ".env.*", "*.env")
SECRET_FOLDERS = ("secrets",)
MIN_LENGTH = 6  # shorter values (a port, "yes") are not worth hiding and would mask half a report
_HARMLESS = frozenset({"true", "false", "null", "none", "localhost", "development", "production", "staging"})
_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*[=:]\s*(.*?)\s*$")


def mask(value: str) -> str:
    """«canary» or «secret: 22 chars, #a1b2c3»: what is shown instead of `value`."""
    if value.startswith(PREFIX):
        return "«canary»"
    return f"«secret: {len(value)} chars, #{hashlib.sha256(value.encode()).hexdigest()[:6]}»"


def redact(text: str, values: Iterable[str]) -> str:
    """`text` with each secret value in it masked (the longest first, so one inside another is masked whole)."""
    for value in sorted({v for v in values if v}, key=len, reverse=True):
        if value in text:
            text = text.replace(value, mask(value))
    return text


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
