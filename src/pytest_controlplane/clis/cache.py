"""Claude Code releases installed once into a user cache: `<cache>/<version>/claude`, and beside it `source.json` (the
version, the tarball it came from, its sha512, when it was installed).

The cache is `$CONTROLPLANE_CLI_CACHE`, else `$XDG_CACHE_HOME/pytest-controlplane/claude-cli`, else
`~/.cache/pytest-controlplane/claude-cli` (`~` the account's home, whatever $HOME says).  Many processes may ask at
once (xdist workers, CI jobs on one runner): one holds a lock on the cache folder while it downloads into a hidden
`.partial` folder, checks the sha512 and renames the folder into place; the others wait for the lock, then find the
release there.  A failed install leaves nothing.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import json
import os
import pwd
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ours
from . import npm

__tracebackhide__ = ours  # our errors show without our frames

CACHE_ENV = "CONTROLPLANE_CLI_CACHE"
SOURCE = "source.json"


@dataclass(frozen=True)
class Installed:
    """A release in the cache: its executable and what `source.json` says of it."""

    version: str
    path: Path
    source: dict[str, Any]


def root() -> Path:
    """The cache folder.  `~` is the account's home, not $HOME: a test run that moves $HOME away (pytester does,
    and so does every agent world) still finds the releases installed, instead of fetching each one again."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    return Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "pytest-controlplane" / "claude-cli"


def installed(version: str) -> Installed | None:
    """`version` as the cache holds it (None: not installed)."""
    folder = root() / version
    try:
        source = json.loads((folder / SOURCE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return Installed(version, folder / "claude", source) if (folder / "claude").is_file() else None


def every() -> list[Installed]:
    """Every release in the cache, oldest version first."""
    names = [p.name for p in root().iterdir() if npm.VERSION.fullmatch(p.name)] if root().is_dir() else []
    found = [release for release in map(installed, names) if release is not None]
    return sorted(found, key=lambda release: npm.version_key(release.version))


def install(version: str, *, announce: Callable[[str], None] = lambda line: None) -> tuple[Installed, bool]:
    """`version` (or "latest") from the npm registry into the cache, unless it is there already: the release, and
    whether this call installed it.  `announce` hears one line before a download starts."""
    if version != "latest" and (found := installed(version)) is not None:
        return found, False
    release = npm.release(version)
    base = root()
    base.mkdir(parents=True, exist_ok=True)
    with _locked(base):
        if (found := installed(release.version)) is not None:  # there already, or another process installed it
            return found, False
        for stale in base.glob(".*.partial"):  # what an install that was killed left
            shutil.rmtree(stale, ignore_errors=True)
        target = base / release.version
        announce(f"installing Claude Code {release.version} from {release.tarball} into {target}")
        staging = Path(tempfile.mkdtemp(prefix=f".{release.version}-", suffix=".partial", dir=base))
        try:
            _fill(staging, release)
            shutil.rmtree(target, ignore_errors=True)  # a folder without a complete install in it
            staging.rename(target)
        except BaseException as error:
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(error, OSError) and error.errno == errno.ENOSPC:
                raise ConfigError(
                    f"No space left on the device of {base} for Claude Code {release.version} (a release takes "
                    "about 0.6 GB while it installs, 0.4 GB after). Nothing was installed.",
                    hint=f"Free some space, or point ${CACHE_ENV} at a disk with room.",
                ) from None
            raise
    return Installed(release.version, target / "claude", json.loads((target / SOURCE).read_text())), True


def _fill(staging: Path, release: npm.Release) -> None:
    """The verified tarball's `package/claude` and the record of where it came from, in `staging`."""
    tarball = staging / "package.tgz"
    npm.download(release, tarball)
    with tarfile.open(tarball, "r|gz") as archive:  # one pass through the stream, to the binary
        binary = next((archive.extractfile(m) for m in archive if m.name == "package/claude" and m.isfile()), None)
        if binary is None:
            raise ConfigError(f"The tarball of {release.package} {release.version} holds no package/claude.")
        with binary, (staging / "claude").open("wb") as out:
            shutil.copyfileobj(binary, out, 1 << 20)
    tarball.unlink()
    (staging / "claude").chmod(0o755)
    staging.chmod(0o755)  # mkdtemp made it private; a cache may be shared (a CI runner's)
    when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    source = {"version": release.version, "package": release.package, "tarball": release.tarball,
              "integrity": release.integrity, "installed_at": when}  # fmt: skip
    (staging / SOURCE).write_text(json.dumps(source, indent=1) + "\n", encoding="utf-8")


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """The cache folder's own lock (flock on the folder: no lock file is left behind), held until the block ends."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)
