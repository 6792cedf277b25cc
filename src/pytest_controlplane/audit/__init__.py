"""The audit: every curated bypass variant of the default targets, under every permission mode the agent accepts,
played through the user's own `agent` without a test of theirs (`pytest --agent-audit`); the route x mode matrix of
what held, and the regression module that pins it.

    plan.py        what the audit tries (targets, modes, cases), and `attempt_case`, which plays one
    records.py     what one item found, as plain records (JSON for shards, merged by `controlplane audit merge`)
    matrix.py      the matrix of the records, and its terminal table
    page.py        the matrix as a self-contained HTML page, linked to each hole's report
    regression.py  the pytest module that pins every item's verdict
    sarif.py       the holes as SARIF 2.1.0, for code scanning
    summary.py     the holes as a Markdown summary and GitHub Actions annotations
"""

from __future__ import annotations

from .audited import fixtures_of
from .matrix import Matrix
from .plan import (
    DEFAULT_MODES,
    DEFAULT_TARGETS,
    AuditCase,
    attempt_case,
    cases,
    in_shard,
    parse_modes,
    parse_shard,
    parse_targets,
)
from .records import CELLS, Record, dump, load, merge

__all__ = [
    "fixtures_of",
    "CELLS",
    "DEFAULT_MODES",
    "DEFAULT_TARGETS",
    "AuditCase",
    "Matrix",
    "Record",
    "attempt_case",
    "cases",
    "dump",
    "in_shard",
    "load",
    "merge",
    "parse_modes",
    "parse_shard",
    "parse_targets",
]
