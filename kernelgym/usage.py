"""Token and cost accounting of model-driven policies: `StepUsage` (one act's token use, cost and API time), the
dated price table (`PriceTable`, read from a policy's YAML) and `episode_totals`, which rollout puts in its result.

Prices are USD per million tokens. A model with no row in the table costs ``None`` (with a note saying so), never an
exception: an unpriced local model (vLLM, SGLang) still runs and is still counted in tokens.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

#: What may follow a row's name in a model id the row prices: a date (claude-sonnet-4-5-20250929,
#: gpt-5-2025-08-07) or "-latest"; not a version (claude-sonnet-4-6 is not priced as claude-sonnet-4).
DATED_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)")

#: Token fields summed across steps and episodes.
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens")


def token_count(value: Any) -> int:
    """`value` as a token count: a finite number >= 0, truncated to an int; anything else (a string, None, NaN,
    infinity, a negative number, a list) is 0. Usage fields come from a CLI's or server's output, which a test
    double, a proxy or a new CLI version may fill with anything: a bad field must not stop the accounting."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return max(0, int(value))


@dataclass
class StepUsage:
    """What one `act()` cost: tokens, USD, API calls and the time spent waiting on the model.

    Token fields are disjoint, so their sum is every prompt and output token:

    - `input_tokens`: prompt tokens billed at the full input rate (not read from or written to a cache).
    - `cached_tokens`: prompt tokens read from the provider's prompt cache (cheaper).
    - `cache_write_tokens`: prompt tokens written to the cache (Anthropic bills them above the input rate).
    - `output_tokens`: generated tokens (reasoning tokens included where the provider counts them as output).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0
    """USD for these tokens at the price table's rates; None when the model has no price (see `note`)."""
    api_calls: int = 0
    """Requests that returned a reply (retries not counted)."""
    retries: int = 0
    """Requests retried after a rate limit (429), a server error (5xx) or a connection error (for a CLI policy,
    the retries its transcript reports: Claude Code's ``api_retry`` events, Codex's reconnects)."""
    wall_s: float = 0.0
    """Seconds spent in API calls, retry waits included."""
    model: str | None = None
    """The model named in the last reply (providers may return a dated id, e.g. claude-sonnet-4-5-20250929)."""
    note: str | None = None
    """Why `cost_usd` is None, if it is."""

    def __add__(self, other: StepUsage) -> StepUsage:
        """The sum of two usages; the cost is None if either is (unknown stays unknown)."""
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return StepUsage(**{f: getattr(self, f) + getattr(other, f) for f in TOKEN_FIELDS}, cost_usd=cost,
                         api_calls=self.api_calls + other.api_calls, retries=self.retries + other.retries,
                         wall_s=self.wall_s + other.wall_s, model=other.model or self.model,
                         note=other.note or self.note)

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-able dict (what the trajectory and results.json hold)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> StepUsage:
        """A StepUsage from `to_dict`'s output; unknown keys are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})


@dataclass
class Price:
    """USD per million tokens of one model."""

    input: float
    output: float
    cached_input: float | None = None
    """Cache reads; None: billed as `input`."""
    cache_write: float | None = None
    """Cache writes; None: billed as `input`."""


class PriceTable:
    """Prices by model name, as of a date. A model matches its own row, or a row it extends with a date
    (``claude-sonnet-4-5-20250929`` matches ``claude-sonnet-4-5``; see `DATED_SUFFIX`).

    Args:
        prices: model name -> {input, output, cached_input?, cache_write?} (USD per million tokens).
        as_of: the date the prices were read from the provider's pricing page (ISO, e.g. "2025-11-24").

    Raises:
        ValueError: a row that is not a mapping or lacks `input`/`output`.
    """

    def __init__(self, prices: Mapping[str, Mapping[str, float]] | None, as_of: str | None):
        self.as_of = as_of
        self.prices: dict[str, Price] = {}
        for name, row in (prices or {}).items():
            if not isinstance(row, Mapping) or "input" not in row or "output" not in row:
                raise ValueError(f"price table row {name!r} must be a mapping with input and output "
                                 f"(USD per million tokens), got {row!r}")
            self.prices[str(name)] = Price(**row)

    def lookup(self, model: str | None) -> Price | None:
        """The price row of `model` (its exact name, else a row it extends with a date suffix), or None."""
        if not model:
            return None
        if model in self.prices:
            return self.prices[model]
        for name, price in self.prices.items():
            if model.startswith(name) and DATED_SUFFIX.fullmatch(model[len(name):]):
                return price
        return None

    def cost(self, usage: StepUsage) -> tuple[float | None, str | None]:
        """(USD, None) for `usage`'s tokens at `usage.model`'s price, or (None, note) when it has no row."""
        price = self.lookup(usage.model)
        if price is None:
            return None, (f"no price for model {usage.model!r} in the policy's price table "
                          f"(prices as of {self.as_of}); add a row under `prices` to get costs")
        cached = price.input if price.cached_input is None else price.cached_input
        write = price.input if price.cache_write is None else price.cache_write
        usd = (usage.input_tokens * price.input + usage.output_tokens * price.output
               + usage.cached_tokens * cached + usage.cache_write_tokens * write) / 1e6
        return usd, None

    def priced(self, usage: StepUsage) -> StepUsage:
        """`usage` with `cost_usd` (and `note`, when unpriced) filled in from this table."""
        usage.cost_usd, usage.note = self.cost(usage)
        return usage


def episode_totals(steps: Iterable[StepUsage | None], policy_wall_s: float) -> dict[str, Any]:
    """Per-episode totals for rollout's result: the summed token fields, cost, API calls and retries, plus
    `policy_wall_s` (seconds inside the policy's act(), measured by rollout).

    Token and cost fields are None when no step reported usage (a policy that calls no model, e.g. tuner).
    """
    reported = [s for s in steps if s is not None]
    if not reported:
        return {**{f: None for f in TOKEN_FIELDS}, "cost_usd": None, "api_calls": None, "retries": None,
                "model": None, "note": None, "policy_wall_s": policy_wall_s}
    total = sum(reported[1:], reported[0])
    out = total.to_dict()
    out.pop("wall_s")
    out["api_wall_s"] = total.wall_s
    out["policy_wall_s"] = policy_wall_s
    return out
