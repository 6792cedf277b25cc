"""Claude Code releases on the npm registry: the native binary of each version is the package
`@anthropic-ai/claude-code-<platform>` (its tarball's `package/claude`), listed with its tarball URL and a sha512
integrity.  The registry is `$CONTROLPLANE_NPM_REGISTRY` when set (a mirror, or a stand-in in tests)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ours

__tracebackhide__ = ours  # our errors show without our frames

REGISTRY_ENV = "CONTROLPLANE_NPM_REGISTRY"
REGISTRY = "https://registry.npmjs.org"
VERSION = re.compile(r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?")
_PLATFORMS = {("Linux", "x86_64"): "linux-x64", ("Linux", "aarch64"): "linux-arm64",
              ("Darwin", "x86_64"): "darwin-x64", ("Darwin", "arm64"): "darwin-arm64"}  # fmt: skip
_OTHERS = "--agent-cli bundled, system or a PATH"
_OFFLINE_FIX = f"Check the network, or point ${REGISTRY_ENV} at a mirror of the registry; {_OTHERS} need none."


@dataclass(frozen=True)
class Release:
    """One version of the platform's package: where its tarball is and the sha512 it must have."""

    package: str
    version: str
    tarball: str
    integrity: str  # "sha512-<base64>", as the registry lists it


def registry() -> str:
    return (os.environ.get(REGISTRY_ENV) or REGISTRY).rstrip("/")


def platform_package() -> str:
    """The package that holds the native CLI for this machine (musl Linux has its own)."""
    found = _PLATFORMS.get((platform.system(), platform.machine()))
    if found is None:
        raise ConfigError(
            f"No Claude Code package on the npm registry is known for {platform.system()} {platform.machine()}.",
            hint=f"Choose a CLI you have: {_OTHERS}.",
        )
    musl = found.startswith("linux") and platform.libc_ver()[0] != "glibc"
    return f"@anthropic-ai/claude-code-{found}" + ("-musl" if musl else "")


def release(version: str) -> Release:
    """`version` (or "latest") of the platform's package, as the registry lists it; an unknown version is an error
    that names the nearest ones."""
    package = platform_package()
    listing = _get_json(f"{registry()}/{urllib.parse.quote(package, safe='@')}", package)
    versions = listing.get("versions") or {}
    wanted = (listing.get("dist-tags") or {}).get("latest", "") if version == "latest" else version
    if wanted not in versions:
        near = ", ".join(nearest(version, list(versions)))
        raise ConfigError(
            f"Claude Code {version} is not on the npm registry ({package} at {registry()}); the nearest: {near}.",
            hint="Choose one of those: `controlplane cli install VERSION` or --agent-cli VERSION.",
        )
    dist = versions[wanted].get("dist") or {}
    integrity = next((i for i in str(dist.get("integrity", "")).split() if i.startswith("sha512-")), "")
    if not integrity or not dist.get("tarball"):
        raise ConfigError(
            f"The npm registry lists no sha512 integrity for {package} {wanted}: it is not installed unchecked.",
            hint="Choose another version, or install it yourself and give its path: --agent-cli PATH.",
        )
    return Release(package, wanted, str(dist["tarball"]), integrity)


def nearest(version: str, versions: list[str], count: int = 5) -> list[str]:
    """The `count` released versions closest to `version`, in order; the latest of all last."""
    released = sorted((v for v in versions if VERSION.fullmatch(v) and v != "0.0.0"), key=version_key)
    if not released:
        return []
    wanted = version_key(version) if VERSION.fullmatch(version) else version_key(released[-1])
    close = sorted(released, key=lambda v: [abs(a - b) for a, b in zip(version_key(v), wanted, strict=True)])[:count]
    return sorted(set(close) | {released[-1]}, key=version_key)


def download(found: Release, path: Path) -> None:
    """The tarball of `found` into `path`, its sha512 checked against the registry's integrity: a mismatch is an
    error (the caller removes the file)."""
    digest = hashlib.sha512()
    with _open(found.tarball, found.package) as response, path.open("wb") as out:
        while chunk := response.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    got = "sha512-" + base64.b64encode(digest.digest()).decode()
    if got != found.integrity:
        raise ConfigError(
            f"The tarball of {found.package} {found.version} ({found.tarball}) does not have the sha512 the registry "
            f"lists: expected {found.integrity}, got {got}. Nothing was installed.",
            hint="Try again (a download cut short, or a proxy that changed it); if it persists, the mirror is wrong.",
        )


def version_key(version: str) -> tuple[int, int, int]:
    """A version's numbers, to sort and compare by."""
    major, minor, patch = VERSION.fullmatch(version).group(0).split("-")[0].split(".")  # type: ignore[union-attr]
    return int(major), int(minor), int(patch)


def _get_json(url: str, package: str) -> dict[str, Any]:
    with _open(url, package, accept="application/vnd.npm.install-v1+json") as response:
        return dict(json.load(response))


def _open(url: str, package: str, accept: str = "*/*") -> Any:
    """`url`, opened; an unreachable registry and a missing package are errors that say what to do."""
    try:
        return urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": accept}), timeout=60)
    except urllib.error.HTTPError as error:
        if error.code == 404:
            raise ConfigError(
                f"The npm registry at {registry()} has no {url.rsplit('/', 1)[-1]} ({package}).",
                hint=f"Point ${REGISTRY_ENV} at a registry that carries it, or choose {_OTHERS}.",
            ) from None
        raise ConfigError(
            f"The npm registry answered {error.code} {error.reason} for {url}.", hint=_OFFLINE_FIX
        ) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise ConfigError(f"Could not reach the npm registry at {registry()} ({reason}).", hint=_OFFLINE_FIX) from None
