"""The statistics of reports and comparisons: the paired bootstrap interval of a mean difference, and fast_p."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

import numpy as np

DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SEED = 0
# Resamples drawn per block: a block is (block x pairs) indices, so memory stays bounded for many pairs.
_BLOCK = 1000


@dataclass(frozen=True)
class Interval:
    """A mean difference and its percentile bootstrap confidence interval."""

    mean: float
    """The observed mean of the differences."""
    low: float
    high: float
    n: int
    """Pairs the differences came from."""
    confidence: float
    n_resamples: int

    @property
    def includes_zero(self) -> bool:
        """Whether 0 lies in [low, high]: no significant difference at this confidence."""
        return self.low <= 0.0 <= self.high

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "includes_zero": self.includes_zero}


def paired_bootstrap(differences: Sequence[float], *, n_resamples: int = DEFAULT_RESAMPLES,
                     confidence: float = DEFAULT_CONFIDENCE, seed: int = DEFAULT_SEED) -> Interval:
    """The percentile bootstrap interval of the mean of paired differences (B - A per pair): the pairs are
    resampled with replacement `n_resamples` times with numpy's generator seeded by `seed` (the same input gives
    the same interval), and the interval holds the central `confidence` of the resampled means.

    Args:
        differences: one difference per pair, shape (n,), n >= 1, each finite.
        n_resamples: resamples, >= 1.
        confidence: in (0, 1), e.g. 0.95.
        seed: the generator's seed.

    Raises:
        ValueError: no differences, a difference not finite, `n_resamples` < 1 or `confidence` outside (0, 1).
    """
    d = np.asarray(list(differences), dtype=np.float64)
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"paired_bootstrap needs at least one difference, got {d.size}")
    if not np.isfinite(d).all():
        raise ValueError("paired_bootstrap: every difference must be finite")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    for start in range(0, n_resamples, _BLOCK):
        count = min(_BLOCK, n_resamples - start)
        means[start:start + count] = d[rng.integers(0, d.size, size=(count, d.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Interval(float(d.mean()), float(low), float(high), int(d.size), confidence, n_resamples)


def is_fast(correct: bool | None, speedup: float | None, p: float) -> bool:
    """Whether an episode counts towards fast_p: correct and more than `p` times faster. An untimed correct kernel
    (CPU interpreter) counts for p = 0 only, where every correct kernel does (KernelBench's fast_0 is the
    correctness rate)."""
    if not correct:
        return False
    return p <= 0.0 if speedup is None else speedup > p


def fast_p(episodes: Iterable[tuple[str, bool | None, float | None]], ps: Sequence[float]) -> list[float | None]:
    """KernelBench's fast_p for each threshold in `ps`: the fraction of tasks whose kernel is correct and more than
    p times faster than the baseline. A task with several episodes (seeds) counts the fraction of its episodes
    that are (so every task weighs the same; with one episode per task this is KernelBench's definition).

    Args:
        episodes: (task, correct, speedup) per episode; speedup None where not measured.
        ps: thresholds, e.g. 0, 0.5, 1, 1.5, 2.

    Returns:
        One fraction in [0, 1] per threshold; None for each when there are no episodes.
    """
    by_task: dict[str, list[tuple[bool | None, float | None]]] = {}
    for task, correct, speedup in episodes:
        by_task.setdefault(task, []).append((correct, speedup))
    if not by_task:
        return [None for _ in ps]
    return [sum(sum(is_fast(c, s, p) for c, s in eps) / len(eps) for eps in by_task.values()) / len(by_task)
            for p in ps]


def mean(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are not None, or None when there are none."""
    xs = [float(v) for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def geomean(values: Iterable[float | None]) -> float | None:
    """The geometric mean of the positive values that are not None, or None when there are none."""
    xs = [float(v) for v in values if v is not None and v > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None
