"""`compare_runs`: run B against run A, paired by (task, seed), with bootstrap intervals (`kernelgym compare`).

Differences are B - A. Episodes pair by task and seed (the same task drawn with the same seed on both sides);
an episode without its pair is left out and counted. A pair where either side is an infrastructure fault
(`kernelgym.grader.outcome.is_infra_fault`) is left out too: its 0 says nothing about either policy. Speedups
pair only where both sides were timed.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kernelgym.errors import KernelGymError
from kernelgym.grader.outcome import is_infra_fault
from kernelgym.report.runs import EpisodeRow
from kernelgym.report.stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, Interval, mean, \
    paired_bootstrap


#: Fewer pairs than this get no verdict of significance: the bootstrap of a few pairs understates its spread (a
#: handful of equal differences resample to a zero-width interval).
MIN_PAIRS = 6


@dataclass
class TaskDelta:
    """One task's paired episodes: means on each side and their difference (B - A)."""

    task: str
    pairs: int
    score_a: float
    score_b: float
    score_delta: float
    speedup_pairs: int
    speedup_a: float | None
    speedup_b: float | None
    speedup_delta: float | None


@dataclass
class Comparison:
    """What `compare_runs` found."""

    label_a: str
    label_b: str
    pairs: int
    tasks: list[TaskDelta]
    score: Interval | None
    """Mean score difference B - A over the pairs, with its interval (None: no pair)."""
    speedup: Interval | None
    """Mean speedup difference B - A over the pairs timed on both sides (None: none was)."""
    unpaired_a: list[tuple[str, int | None]] = field(default_factory=list)
    unpaired_b: list[tuple[str, int | None]] = field(default_factory=list)
    infra_faults: int = 0
    """Pairs left out because a side was an infrastructure fault."""
    hardware_a: list[str] = field(default_factory=list)
    hardware_b: list[str] = field(default_factory=list)
    """The hardware profiles each side's paired episodes ran on (a score on the CPU interpreter, where nothing is
    timed, is not comparable with one on a GPU)."""

    @property
    def verdict(self) -> str:
        """One line: each difference with its interval, and whether it is significant (the interval excludes 0)."""
        if self.score is None:
            return f"{self.label_b} vs {self.label_a}: no (task, seed) pair to compare"
        parts = [_judge("score", self.score, "{:+.2f}", self.label_b, "higher", "lower")]
        parts.append(_judge("speedup", self.speedup, "{:+.3f}x", self.label_b, "faster", "slower") if self.speedup
                     else "speedup: not timed on both sides")
        # What was left out changes what the verdict covers (a side whose failures are infra faults loses exactly
        # its failures): the line says so, not only the table above it.
        left = [f"{n} {what}" for n, what in ((self.infra_faults, "with an infrastructure fault"),
                                               (len(self.unpaired_a), f"of {self.label_a} unpaired"),
                                               (len(self.unpaired_b), f"of {self.label_b} unpaired")) if n]
        mismatch = (f" (warning: {self.label_a} ran on {', '.join(self.hardware_a)}, {self.label_b} on "
                    f"{', '.join(self.hardware_b)}: not comparable)" if self.hardware_a != self.hardware_b else "")
        return (f"{self.label_b} vs {self.label_a} over {self.pairs} (task, seed) pairs: " + "; ".join(parts)
                + (f" (left out: {', '.join(left)})" if left else "") + mismatch)

    def to_dict(self) -> dict[str, Any]:
        return {"label_a": self.label_a, "label_b": self.label_b, "pairs": self.pairs,
                "tasks": [asdict(t) for t in self.tasks],
                "score": self.score.to_dict() if self.score else None,
                "speedup": self.speedup.to_dict() if self.speedup else None,
                "unpaired_a": [list(k) for k in self.unpaired_a], "unpaired_b": [list(k) for k in self.unpaired_b],
                "infra_faults": self.infra_faults, "hardware_a": self.hardware_a, "hardware_b": self.hardware_b,
                "verdict": self.verdict}


def _judge(name: str, iv: Interval, fmt: str, label_b: str, up: str, down: str) -> str:
    head = (f"{name} {fmt.format(iv.mean)} ({iv.confidence:.0%} CI {fmt.format(iv.low)} to "
            f"{fmt.format(iv.high)})")
    if iv.n < 2:  # one pair resamples to itself: a zero-width interval whatever the difference
        return f"{head}: one pair, too few to judge significance"
    if iv.n < MIN_PAIRS:  # a handful of equal differences resample to a zero-width interval too
        return f"{head}: {iv.n} pairs, too few to judge significance (at least {MIN_PAIRS})"
    if iv.includes_zero:
        return f"{head}: no significant difference (the interval includes 0)"
    return f"{head}: {label_b} is significantly {up if iv.mean > 0 else down}"


def _by_key(rows: list[EpisodeRow], side: str) -> dict[tuple[str, int | None], EpisodeRow]:
    keyed: dict[tuple[str, int | None], EpisodeRow] = {}
    for row in rows:
        key = (row.task, row.seed)
        if key in keyed:
            raise KernelGymError(f"{side} holds two episodes of task {row.task} with seed {row.seed} "
                                 f"({keyed[key].run_dir} episode {keyed[key].episode}, {row.run_dir} episode "
                                 f"{row.episode}): episodes pair by (task, seed), so give each side one of them")
        keyed[key] = row
    return keyed


def compare_runs(rows_a: list[EpisodeRow], rows_b: list[EpisodeRow], *, label_a: str = "A", label_b: str = "B",
                 n_resamples: int = DEFAULT_RESAMPLES, confidence: float = DEFAULT_CONFIDENCE,
                 seed: int = DEFAULT_SEED) -> Comparison:
    """Compare the episodes of B with those of A, paired by (task, seed); see the module's docstring.

    Args:
        rows_a, rows_b: each side's episodes (`kernelgym.report.runs.read_runs`).
        label_a, label_b: the sides' names in the verdict.
        n_resamples, confidence, seed: the bootstrap's (`kernelgym.report.stats.paired_bootstrap`).

    Raises:
        KernelGymError: a side holds two episodes of the same (task, seed).
        ValueError: `n_resamples` or `confidence` out of range.
    """
    a, b = _by_key(rows_a, label_a), _by_key(rows_b, label_b)
    keys = [k for k in a if k in b]
    faulty = [k for k in keys if is_infra_fault(a[k].outcome) or is_infra_fault(b[k].outcome)]
    pairs = [(a[k], b[k]) for k in keys if k not in faulty]
    tasks: list[TaskDelta] = []
    for task in dict.fromkeys(x.task for x, _ in pairs):
        mine = [(x, y) for x, y in pairs if x.task == task]
        timed = [(x, y) for x, y in mine if x.speedup is not None and y.speedup is not None]
        score_a, score_b = mean(x.score for x, _ in mine), mean(y.score for _, y in mine)
        speed_a, speed_b = mean(x.speedup for x, _ in timed), mean(y.speedup for _, y in timed)
        tasks.append(TaskDelta(task, len(mine), score_a, score_b, score_b - score_a, len(timed), speed_a, speed_b,
                               None if speed_a is None else speed_b - speed_a))
    boot = dict(n_resamples=n_resamples, confidence=confidence, seed=seed)
    score = paired_bootstrap([y.score - x.score for x, y in pairs], **boot) if pairs else None
    timed = [y.speedup - x.speedup for x, y in pairs if x.speedup is not None and y.speedup is not None]
    speedup = paired_bootstrap(timed, **boot) if timed else None
    return Comparison(label_a, label_b, len(pairs), tasks, score, speedup,
                      unpaired_a=[k for k in a if k not in b], unpaired_b=[k for k in b if k not in a],
                      infra_faults=len(faulty),
                      hardware_a=sorted({x.hardware or "unknown" for x, _ in pairs}),
                      hardware_b=sorted({y.hardware or "unknown" for _, y in pairs}))
