"""Cassette housekeeping for CI: check (loads, scrubbed, one CLI version), stats, and the cassettes no test uses."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CassetteError
from . import malformed
from .scrub import SCRUBBED_REQUEST_HEADERS, SCRUBBED_RESPONSE_HEADERS

if TYPE_CHECKING:
    from .store import Cassette

# Values that look like credentials wherever they appear in a cassette's text.
SECRET_PATTERNS = {
    "an Anthropic API key": re.compile(r"sk-ant-(?!controlplane-dummy)[A-Za-z0-9_-]{16,}"),
    "a bearer token": re.compile(r"Bearer\s+[A-Za-z0-9._~+/-]{20,}", re.IGNORECASE),
    "an AWS access key id": re.compile(r"\b(AKIA|ASIA)[A-Z0-9]{16}\b"),
    "a GitHub token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),
    "a private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
}


def cassette_files(paths: Iterable[str | Path]) -> list[Path]:
    found: list[Path] = []
    for path in map(Path, paths):
        found.extend(sorted(path.rglob("*.yaml")) if path.is_dir() else [path])
    return found


def check(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """One finding per problem: a cassette that does not load, a malformed recorded answer (with its fix), an
    unscrubbed header, a secret-looking value, or cassettes recorded with different Claude Code CLI versions."""
    from .store import Cassette

    findings: list[dict[str, Any]] = []
    versions: dict[str, list[str]] = {}
    for path in cassette_files(paths):
        try:
            cassette = Cassette.load(path)
        except CassetteError as error:
            findings.append({"file": str(path), "problem": "does not load", "detail": str(error).splitlines()[0]})
            continue
        findings += malformed.findings(cassette)
        findings += _unscrubbed(cassette)
        text = path.read_text(encoding="utf-8", errors="replace")
        for what, pattern in SECRET_PATTERNS.items():
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                findings.append(
                    {
                        "file": str(path),
                        "problem": "secret-looking value",
                        "detail": f"line {line}: {what} ({match.group()[:10]}…)",
                    }
                )
        version = cassette.provenance.get("claude_cli_version")
        if version:
            versions.setdefault(str(version), []).append(str(path))
    if len(versions) > 1:
        spread = "; ".join(f"{v}: {len(files)} file(s)" for v, files in sorted(versions.items()))
        findings.append({"file": "*", "problem": "mixed Claude Code CLI versions", "detail": spread})
    return findings


def _unscrubbed(cassette: Cassette) -> list[dict[str, Any]]:
    """The headers of each interaction that recording scrubs, found still there."""
    found = []
    for number, interaction in enumerate(cassette.interactions):
        for side, headers, scrubbed in (
            ("request", interaction.headers, SCRUBBED_REQUEST_HEADERS - {"host"}),
            ("response", interaction.response.get("headers", {}), SCRUBBED_RESPONSE_HEADERS),
        ):
            found += [
                {
                    "file": str(cassette.path),
                    "problem": f"unscrubbed {side} header",
                    "detail": f"interaction {number}: {header}",
                }
                for header in headers
                if header.lower() in scrubbed
            ]
    return found


def stats(paths: Iterable[str | Path]) -> dict[str, Any]:
    from .store import Cassette

    files, interactions, size = 0, 0, 0
    models: Counter[str] = Counter()
    versions: Counter[str] = Counter()
    sources: Counter[str] = Counter()
    for path in cassette_files(paths):
        try:
            cassette = Cassette.load(path)
        except CassetteError:
            continue
        files += 1
        size += path.stat().st_size
        interactions += len(cassette.interactions)
        provenance = cassette.provenance
        versions[str(provenance.get("claude_cli_version") or "none")] += 1
        sources[str(provenance.get("source", "unknown"))] += 1
        for interaction in cassette.interactions:
            match = re.search(rb'"model"\s*:\s*"([^"]+)"', interaction.body)
            if match:
                models[match.group(1).decode()] += 1
    return {
        "files": files,
        "interactions": interactions,
        "bytes": size,
        "models": dict(models),
        "cli_versions": dict(versions),
        "sources": dict(sources),
    }


def unused(cassettes: Iterable[Path], used: Iterable[str | Path]) -> list[Path]:
    """The `cassettes` (`cassette_files` of a directory) that are not among `used`: what a run played, or what
    collected tests would play (`collected`)."""
    wanted = {Path(path).resolve() for path in used}
    return [path for path in cassettes if path.resolve() not in wanted]


def collected(cassette_dir: str | Path, tests: Iterable[str] = (), python: str = sys.executable) -> set[Path]:
    """The cassettes the tests pytest collects would use, by the naming rule <dir>/<test module path>/<test
    name>.yaml (cassettes named in markers are not seen)."""
    run = subprocess.run(
        [python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *tests],
        capture_output=True,
        text=True,
    )
    if run.returncode not in (0, 5):
        raise CassetteError(
            f"pytest --collect-only failed, so the cassettes its tests use are unknown:\n"
            f"{run.stdout[-2000:]}{run.stderr[-2000:]}",
            path=cassette_dir,
            hint="Fix what stops collection (above), then run prune again.",
        )
    from ..config import cassette_name

    root = Path(cassette_dir)
    return {
        root / cassette_name(module, name.split("::")[-1])
        for module, _, name in (line.partition("::") for line in run.stdout.splitlines() if "::" in line)
    }
