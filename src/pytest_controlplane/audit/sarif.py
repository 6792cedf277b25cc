"""The holes of a run as SARIF 2.1.0, the format code scanning reads (GitHub, and every scanner that emits it).

One rule per route (`Bash >`, `Write`, `staged: script written, python3 runs it`, ...) with the class of real failure
it stands for; one result per hole — a variant whose forbidden effect happened — with its reproduction in the message,
a level from its family (write, exec, escape: error; read: warning; a note in a what-if column — another permission
mode or sandbox level than the configuration as it is, configured.py — never an alert), a location on the control
plane that let it through (the settings file of a settings-driven agent, the conftest that defines the agent, else
the test file), and a `partialFingerprints` entry that is the same in every run and every shard, so that a fixed hole
closes its alert.

An everyday task the control plane blocked (work it must allow: a false positive) is a result too: a `warning` (a note
in a what-if column) under a rule of its own, `everyday/<task>`, located on the control plane that blocked it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..atomic import write_atomically
from ..cli_facts import version_key
from .matrix import BLOCKED_BY, task
from .records import EVERYDAY, Record

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"write": "error", "exec": "error", "escape": "error", "read": "warning"}
MAX_RESULTS = 25_000  # GitHub's limit per run
_ISSUE = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+|([\w.-]+/[\w.-]+)#(\d+)")


def everyday_rule_id(record: Record) -> str:
    """`everyday/write-env-example`: a blocked everyday task's rule (stable: the task's id)."""
    slug = record.variant.removeprefix(f"{EVERYDAY}:")
    return "everyday/" + ("-".join(re.sub(r"[^\w]+", " ", slug.lower()).split()) or "task")


def rule_id(route: str) -> str:
    """`route/bash-redirect`: a route as a rule's id (stable: the route's name)."""
    return "route/" + ("-".join(re.sub(r"[^\w]+", " ", route.lower()).split()) or "route")


def fingerprint(record: Record) -> str:
    """The same hole, in every run and every shard: its family, target, variant and mode (and its CLI release, when
    the audit compares releases)."""
    key = f"{record.family}|{record.target}|{record.variant}|{record.mode}" + f"|{record.cli}" * bool(record.cli)
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def _on_each_release(records: list[Record]) -> dict[tuple[str, str, str, str], dict[str, str]]:
    """Each variant's cell on each release of the drift axis ({} without one)."""
    found: dict[tuple[str, str, str, str], dict[str, str]] = {}
    for r in records:
        if r.cli:
            found.setdefault((r.family, r.target, r.variant, r.mode), {})[r.cli] = r.cell
    return found


def _drift_words(cells: dict[str, str]) -> str:
    """ " Bypassed on 2.1.300, 2.1.332; held on 2.1.337." for a hole whose verdict changes between releases."""
    if len(set(cells.values())) < 2:
        return ""
    by_cell: dict[str, list[str]] = {}
    for cli in sorted(cells, key=version_key):
        by_cell.setdefault(cells[cli], []).append(cli)
    return " " + "; ".join(f"{cell} on {', '.join(clis)}" for cell, clis in by_cell.items()).capitalize() + "."


def _help(reference: str) -> str | None:
    """The first public report a reference cites, as a URL (references cite them by URL; `owner/repo#N` also
    reads)."""
    found = _ISSUE.search(reference)
    if not found:
        return None
    return (
        found.group(0) if found.group(0).startswith("https://") else f"https://github.com/{found[1]}/issues/{found[2]}"
    )


def _location(record: Record) -> dict[str, Any]:
    path, line = record.place
    return {"physicalLocation": {"artifactLocation": {"uri": path.lstrip("/"), "uriBaseId": "%SRCROOT%"},
                                 "region": {"startLine": line}}}  # fmt: skip


def _message(r: Record, releases: dict[tuple[str, str, str, str], dict[str, str]]) -> str:
    """A hole's words: what got through and how (a what-if says so first), who saw it, its drift, its reproduction."""
    return (
        ("What-if, not the configuration as it is: " if r.what_if else "")
        + f"{r.family} {r.target} got through by {r.spelled}"
        + (f", under permission mode {r.mode}" if r.mode != "-" else "")
        + (f", on Claude Code {r.cli}" if r.cli else "")
        + f" ({r.variant})."
        + (f" {r.seen_by[0].upper()}{r.seen_by[1:]}." if r.seen_by else "")
        + _drift_words(releases.get((r.family, r.target, r.variant, r.mode), {}))
        + f"\nReproduce:\n{r.reproduction}"
    )


def document(records: Iterable[Record], *, meta: dict[str, Any]) -> dict[str, Any]:
    """The SARIF log of the holes among `records`, then of the everyday tasks blocked; on a drift axis, each hole says
    its release, and its verdict on the others where they differ."""
    records = list(records)
    holes = [r for r in records if r.cell == "bypassed"]
    blocked = [r for r in records if r.cell == "blocked"]
    releases = _on_each_release(records)
    rules: dict[str, dict[str, Any]] = {}
    for record in holes:
        rule = rules.setdefault(rule_id(record.route), _hole_rule(record))
        if _help(record.reference) and "helpUri" not in rule:
            rule["helpUri"] = _help(record.reference)
    for record in blocked:
        rules.setdefault(everyday_rule_id(record), _everyday_rule(record))
    results = [_hole_result(r, rules, releases) for r in holes[:MAX_RESULTS]]
    results += [_blocked_result(r, rules) for r in blocked[: max(0, MAX_RESULTS - len(results))]]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "pytest-controlplane",
                        "informationUri": "https://github.com/pytest-controlplane/pytest-controlplane",
                        "version": str(meta.get("version") or "0"),
                        "rules": list(rules.values()),
                    }
                },
                "results": results,
                "properties": {k: v for k, v in meta.items() if isinstance(v, str)},
            }
        ],
    }


def _hole_rule(record: Record) -> dict[str, Any]:
    return {
        "id": rule_id(record.route),
        "name": record.route,
        "shortDescription": {"text": f"A forbidden action got through by {record.route}"},
        "fullDescription": {"text": record.reference or f"{record.route} reached a protected target."},
        "defaultConfiguration": {"level": LEVELS.get(record.family, "error")},
        "properties": {"tags": ["security", "agent-control-plane", record.route_class]},
    }


def _hole_result(r: Record, rules: dict[str, Any], releases: dict[tuple[str, str, str, str], dict[str, str]]) -> dict:
    return {
        "ruleId": rule_id(r.route),
        "ruleIndex": list(rules).index(rule_id(r.route)),
        "level": "note" if r.what_if else LEVELS.get(r.family, "error"),
        "message": {"text": _message(r, releases)},
        "locations": [_location(r)],
        "partialFingerprints": {"controlplaneHole/v1": fingerprint(r)},
        "properties": {"variant": r.variant, "mode": r.mode, "target": r.target, "family": r.family}
        | {"what_if": r.what_if}
        | ({"cli": r.cli, "cells_by_cli": releases[(r.family, r.target, r.variant, r.mode)]} if r.cli else {}),
    }


def _everyday_rule(record: Record) -> dict[str, Any]:
    return {
        "id": everyday_rule_id(record),
        "name": task(record),
        "shortDescription": {"text": f"An everyday task was blocked: {task(record)}"},
        "fullDescription": {"text": "Work a coding agent must still be able to do was refused by the control plane."},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": ["usability", "false-positive", "agent-control-plane", record.route_class]},
    }


def _blocked_result(r: Record, rules: dict[str, Any]) -> dict[str, Any]:
    """An everyday task blocked: who blocked it (the layer, the hook or rule's words), and how to play it again."""
    who = BLOCKED_BY.get(r.layer or "unknown", r.layer) + (f" ({' '.join(r.detail.split())})" if r.detail else "")
    text = (
        ("What-if, not the configuration as it is: " if r.what_if else "")
        + f"an everyday task was blocked: {task(r)}"
        + (f", under permission mode {r.mode}" if r.mode != "-" else "")
        + (f", on Claude Code {r.cli}" if r.cli else "")
        + f" ({r.variant}), by {who}.\nReproduce:\n{r.reproduction}"
    )
    return {
        "ruleId": everyday_rule_id(r),
        "ruleIndex": list(rules).index(everyday_rule_id(r)),
        "level": "note" if r.what_if else "warning",
        "message": {"text": text},
        "locations": [_location(r)],
        "partialFingerprints": {"controlplaneBlocked/v1": fingerprint(r)},
        "properties": {"variant": r.variant, "mode": r.mode, "target": r.target, "family": r.family, "layer": r.layer}
        | {"what_if": r.what_if}
        | ({"cli": r.cli} if r.cli else {}),
    }


def write(records: Iterable[Record], path: Path, *, meta: dict[str, Any]) -> Path:
    """Write the SARIF log of the holes among `records` to `path`, atomically."""
    write_atomically(path, json.dumps(document(records, meta=meta), indent=1, ensure_ascii=False).encode())
    return path


def add_fix(path: Path, closed: Iterable[Record], *, words: str, uri: str, old: str, new: str) -> bool:
    """Give each hole result of the SARIF log at `path` that `closed` holds a `fixes` entry: the settings file at
    `uri` (as the results' locations name it) from `old` to `new`, the change `git apply fix.patch` makes.  False when
    there is no log to add it to."""
    if not path.is_file():
        return False
    log = json.loads(path.read_text(encoding="utf-8"))
    prints = {fingerprint(r) for r in closed}
    change = {
        "description": {"text": f"Proven by controlplane audit --fix: {words}"},
        "artifactChanges": [{
            "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
            "replacements": [{"deletedRegion": {"charOffset": 0, "charLength": len(old)},
                              "insertedContent": {"text": new}}],
        }],
    }  # fmt: skip
    for result in (r for run in log.get("runs", []) for r in run.get("results", [])):
        if result.get("partialFingerprints", {}).get("controlplaneHole/v1") in prints:
            result["fixes"] = [change]
    write_atomically(path, json.dumps(log, indent=1, ensure_ascii=False).encode())
    return True
