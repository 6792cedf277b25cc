"""A spending limit for record/live runs against the real API, shared by every test (and xdist worker).

Tokens are counted from each upstream answer's `usage`; dollars are an estimate at list prices per
million tokens (`PRICES`, by model family; an unknown model is priced as the dearest known one).
Before each upstream request the budget is checked: once spent, the gateway refuses with
BudgetExceeded instead of calling the API.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import BudgetExceeded, ConfigError
from ..wire import token_counts

# USD per million input / output tokens (Anthropic list prices by family; an estimate, not a bill).
PRICES = {"opus": (15.0, 75.0), "sonnet": (3.0, 15.0), "haiku": (1.0, 5.0)}


def parse_budget(tokens: Any, usd: Any) -> tuple[int | None, float | None]:
    """--agent-max-tokens / --agent-budget-usd (or their ini twins, strings) as numbers; (None, None): no budget."""
    try:
        return (int(tokens) if tokens else None), (float(usd) if usd else None)
    except ValueError as error:
        raise ConfigError(
            f"agent_max_tokens / agent_budget_usd must be numbers: {error}",
            hint="Set them to a whole number of tokens and a number of dollars, or leave them unset.",
        ) from None


def price(model: str, input_tokens: int, output_tokens: int) -> float:
    family = next((name for name in PRICES if name in model.lower()), None)
    per_input, per_output = PRICES[family] if family else max(PRICES.values())
    return (input_tokens * per_input + output_tokens * per_output) / 1e6


class Budget:
    """`max_tokens` and/or `max_usd` across the run, kept in `ledger` (a JSON file under a lock)."""

    def __init__(self, ledger: Path, *, max_tokens: int | None = None, max_usd: float | None = None) -> None:
        self.ledger = Path(ledger)
        self.max_tokens = max_tokens
        self.max_usd = max_usd

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        self.ledger.parent.mkdir(parents=True, exist_ok=True)
        with open(self.ledger.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            spent = json.loads(self.ledger.read_text()) if self.ledger.is_file() else {"tokens": 0, "usd": 0.0}
            yield spent
            self.ledger.write_text(json.dumps(spent))

    def check(self) -> None:
        """Raise BudgetExceeded when the run has used its budget."""
        with self._locked() as spent:
            over = (self.max_tokens is not None and spent["tokens"] >= self.max_tokens) or (
                self.max_usd is not None and spent["usd"] >= self.max_usd
            )
            if over:
                limits = " and ".join(
                    x
                    for x in (
                        f"{self.max_tokens} tokens" if self.max_tokens is not None else "",
                        f"${self.max_usd:g}" if self.max_usd is not None else "",
                    )
                    if x
                )
                raise BudgetExceeded(
                    f"The run has used {spent['tokens']} tokens (≈${spent['usd']:.4f} at list prices) of its budget "
                    f"of {limits}: the gateway no longer calls the real API.",
                    hint="Raise --agent-max-tokens / --agent-budget-usd (ini agent_max_tokens / agent_budget_usd), or "
                    "replay from cassettes (`--agent-mode=replay`).",
                )

    def charge(self, model: str, usage: dict[str, Any]) -> None:
        tokens_in, tokens_out = token_counts(usage)
        with self._locked() as spent:
            spent["tokens"] += tokens_in + tokens_out
            spent["usd"] += price(model, tokens_in, tokens_out)
