"""The key of the masks (masking.py): a report names a secret by an HMAC of it under this key, so one secret has one id
in every report of a run, and nobody without the key can check a guess against an id.

The key is `CONTROLPLANE_MASK_KEY` when set (a CI sets it from its secret store, so that its owner can check the
masks of its artifacts later), else what `$XDG_CONFIG_HOME/pytest-controlplane/mask.key` holds (`~/.config/...` by
default), a file made on first use with 32 random bytes, readable by its owner only.  The key goes into no report.
It is read once per process, on the first mask: pytest and its xdist workers share it through the variable or the
file.  Where the file can neither be read nor made (a read-only home), each process draws a key of its own: masks
then differ from one process to the next, but are never an unkeyed digest.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import threading
from pathlib import Path

ENV = "CONTROLPLANE_MASK_KEY"
_lock = threading.Lock()
_key: bytes | None = None  # read on the first mask, not at import: a process that masks nothing makes no file


def key() -> bytes:
    """This process's mask key: read, or made, on the first call; the same bytes on every call after."""
    global _key
    with _lock:  # two threads masking at once must not each draw a key of their own
        if _key is None:
            _key = _load()
        return _key


def key_file() -> Path:
    """Where this machine keeps its mask key."""
    config = os.environ.get("XDG_CONFIG_HOME", "")
    if os.path.isabs(config):  # the XDG spec: a relative value is to be ignored
        return Path(config) / "pytest-controlplane" / "mask.key"
    home = Path.home()
    if not home.is_absolute():  # Python 3.11 gives "~" back when there is no home to be found
        raise RuntimeError("no home directory")
    return home / ".config" / "pytest-controlplane" / "mask.key"


def _load() -> bytes:
    given = os.environ.get(ENV, "")
    if given:  # an empty value would be a key everyone knows
        return given.encode()
    try:
        return _from_file(key_file())
    except (OSError, RuntimeError, ValueError):
        return secrets.token_bytes(32)


def _from_file(path: Path) -> bytes:
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".mask.key.", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(handle, "w", encoding="ascii") as out:
            out.write(secrets.token_hex(32) + "\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            # A hard link publishes the file whole, and never over the key of a process racing this one: both
            # then read the key that got there first.
            os.link(temporary, path)
        except FileExistsError:
            pass
        except OSError:  # a filesystem without hard links: replaced whole (processes racing here may differ)
            os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)
    return _read(path)


def _read(path: Path) -> bytes:
    text = path.read_text(encoding="utf-8").strip()
    if not text:
        raise ValueError(f"{path} holds no key")
    return text.encode()
