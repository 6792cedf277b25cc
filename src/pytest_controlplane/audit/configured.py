"""The configuration as it is, and the what-ifs around it.

An audit's headline, totals and SARIF alerts are about the agent as its repository configures it: the `-` column
(the agent as it is) and the permission mode its settings start in (`permissions.defaultMode`, else the CLI's own,
`default`), with the OS sandbox as configured.  Every other column (another permission mode, the sandbox off or
hardened) is a what-if: shown apart, and in SARIF a note, never an alert (a sandbox nobody turns off is no hole of
theirs).  An agent whose conftest sets another mode in its options is best audited with `--mode -`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..agents.settings_summary import configured_mode
from .plan import split_column

AS_IT_IS = "-"
CONFIGURED_SANDBOX = ("", "configured")


def configured_modes(directories: Iterable[Path]) -> set[str]:
    """The mode columns that are the configuration as it is: `-`, and each audited directory's own mode."""
    return {AS_IT_IS, *(configured_mode(d) for d in directories)}


def what_ifs(columns: Iterable[str], modes: Iterable[str]) -> set[str]:
    """The what-if columns among a run's `columns` (`mode`, `mode@level`, `mode!fault`): another mode than `modes`,
    another sandbox level than the one configured, or a hook made to fail, while the run also plays the configuration
    as it is.  A run that plays no column of the configuration (`--mode acceptEdits` alone) has no what-if: what it
    plays is all it judges, and a hole there is an alert (never a pass made of notes)."""
    columns, modes = set(columns), set(modes)
    other = {c for c in columns if _other(c, modes)}
    return other if other != columns else set()


def _other(column: str, modes: set[str]) -> bool:
    """Not the configuration as it is: another mode, another sandbox level, or a hook made to fail."""
    mode, level, fault = split_column(column)
    return mode not in modes or level not in CONFIGURED_SANDBOX or bool(fault)
