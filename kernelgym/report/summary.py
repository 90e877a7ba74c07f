"""The numbers of a report (what ``report.json`` holds and ``report.html`` draws), from a `RunSet`."""
from __future__ import annotations

import math
from typing import Any

from kernelgym.grader.outcome import OUTCOMES
from kernelgym.report.runs import UNKNOWN, EpisodeRow, RunSet
from kernelgym.report.stats import fast_p, geomean, mean

REPORT_FORMAT = "kernelgym.report/1"
FAST_P_THRESHOLDS = tuple(round(0.1 * k, 1) for k in range(0, 31))
"""p = 0, 0.1, ..., 3.0: the fast_p curve's points."""
FAST_P_HEADLINE = (0.0, 1.0, 1.5, 2.0)
"""The thresholds the page's fast_p table shows (fast_1: faster than the baseline at all)."""
SCORE_BIN = 20.0
"""Width of the score histogram's bins, in points (the compile gate's worth)."""
MAX_SCORE_BINS = 30


def _score_bins(scores: list[float]) -> list[list[float]]:
    """[low, high) edges covering 0 .. max(scores): widths a multiple of `SCORE_BIN`, at most `MAX_SCORE_BINS`."""
    top = max(max(scores, default=0.0), 0.0)  # negative scores fall in the first bin (build_report clamps them)
    width = SCORE_BIN * max(1, math.ceil((top + SCORE_BIN) / SCORE_BIN / MAX_SCORE_BINS))
    count = int(top // width) + 1
    return [[k * width, (k + 1) * width] for k in range(count)]


def _policies(episodes: list[EpisodeRow]) -> list[str]:
    return list(dict.fromkeys(e.policy for e in episodes))


def per_task(episodes: list[EpisodeRow]) -> list[dict[str, Any]]:
    """One row per (task, policy), in order of appearance: episodes, how many compiled and were correct, mean
    score, mean and geometric-mean speedup (over the episodes timed; None where none was) and episodes timed."""
    groups: dict[tuple[str, str], list[EpisodeRow]] = {}
    for e in episodes:
        groups.setdefault((e.task, e.policy), []).append(e)
    return [{"task": task, "policy": policy, "episodes": len(eps),
             "compiled": sum(bool(e.compiled) for e in eps), "correct": sum(bool(e.correct) for e in eps),
             "score_mean": mean(e.score for e in eps),
             "speedup_mean": mean(e.speedup for e in eps), "speedup_geomean": geomean(e.speedup for e in eps),
             "timed": sum(e.speedup is not None for e in eps)}
            for (task, policy), eps in groups.items()]


def outcome_counts(episodes: list[EpisodeRow]) -> dict[str, dict[str, int]]:
    """Per policy, the episodes of each outcome (every outcome of `OUTCOMES` and ``unknown`` present, 0 or more)."""
    names = [*OUTCOMES, UNKNOWN] + sorted({e.outcome for e in episodes} - set(OUTCOMES) - {UNKNOWN})
    return {policy: {name: sum(e.outcome == name for e in episodes if e.policy == policy) for name in names}
            for policy in _policies(episodes)}


def build_report(runs: RunSet) -> dict[str, Any]:
    """The report of `runs`, as JSON-able data.

    Keys: ``format``; ``runs`` (each run directory read, its task, policy and episodes); ``skipped`` (paths left
    out, with why); ``interpreter`` (every episode was graded on the CPU interpreter: no speedups);
    ``episodes`` (`EpisodeRow` dicts); ``per_task`` (`per_task`); ``score_distribution`` (``bins``: [low, high)
    edges, ``counts``: per policy one count per bin); ``fast_p`` (``p``: thresholds, ``by_policy``: one fraction
    per threshold); ``outcomes`` (`outcome_counts`); ``unseen`` (`UnseenRow` dicts); ``usage`` (per episode with
    tokens or cost: task, policy, seed, tokens, cost_usd, speedup).
    """
    eps = runs.episodes
    policies = _policies(eps)
    bins = _score_bins([e.score for e in eps])
    width = bins[0][1] - bins[0][0]
    counts = {p: [0] * len(bins) for p in policies}
    for e in eps:
        counts[e.policy][min(int(max(e.score, 0.0) // width), len(bins) - 1)] += 1
    by_run: dict[str, list[EpisodeRow]] = {}
    for e in eps:
        by_run.setdefault(e.run_dir, []).append(e)
    return {
        "format": REPORT_FORMAT,
        "runs": [{"run_dir": run, "tasks": sorted({e.task for e in rows}), "policies": _policies(rows),
                  "episodes": len(rows)} for run, rows in by_run.items()],
        "skipped": list(runs.skipped),
        "interpreter": bool(eps) and all(e.interpreter for e in eps),
        "episodes": [e.to_dict() for e in eps],
        "per_task": per_task(eps),
        "score_distribution": {"bins": bins, "counts": counts},
        "fast_p": {"p": list(FAST_P_THRESHOLDS),
                   "by_policy": {p: fast_p([(e.task, e.correct, e.speedup) for e in eps if e.policy == p],
                                           FAST_P_THRESHOLDS) for p in policies}},
        "outcomes": outcome_counts(eps),
        "unseen": [u.to_dict() for u in runs.unseen],
        "usage": [{"task": e.task, "policy": e.policy, "seed": e.seed, "tokens": e.tokens, "cost_usd": e.cost_usd,
                   "speedup": e.speedup} for e in eps if e.tokens is not None or e.cost_usd is not None],
    }
