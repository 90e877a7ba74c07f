"""Statistics of timed runs, computed in the trusted parent from every run the harness reported.

The centre of a set of runs is the interquartile mean (the mean of the middle half), not the median: it is as
robust to outliers (a preempted run, a clock change) but not bound to the timer's tick. CUDA event times come
in steps of tens of ns (32 ns on the H200), about 0.6% of a 5 µs kernel, so two medians of the same kernel differ by
whole ticks; the mean of 50 middle values does not.
"""
from __future__ import annotations

import math
import statistics


class TimingError(ValueError):
    """The reported runs are malformed: not lists of finite positive numbers, of equal length, one per round."""


#: No timed run of one kernel call takes longer (ms): a larger number is not a measurement (and would overflow sums).
MAX_RUN_MS = 1e7


def interquartile_mean(values: list[float]) -> float:
    """Mean of the values between the 25th and 75th percentile (ranks n//4 to n - n//4); one value: itself."""
    xs = sorted(values)
    q = len(xs) // 4
    return statistics.fmean(xs[q:len(xs) - q])


def _runs(values, name: str) -> list[float]:
    if not isinstance(values, list) or not values:
        raise TimingError(f"{name}: expected a non-empty list of times")
    try:
        xs = [float(v) for v in values]
    except (TypeError, ValueError, OverflowError):
        raise TimingError(f"{name}: not numbers") from None
    if not all(math.isfinite(x) and 0 < x <= MAX_RUN_MS for x in xs):
        raise TimingError(f"{name}: every time must be finite, positive and at most {MAX_RUN_MS:g} ms")
    return xs


def summarize(baseline_runs, candidate_runs, rounds: int) -> dict:
    """Speedup of the candidate over the baseline from their timed runs (ms, in round order).

    Args:
        baseline_runs, candidate_runs: one time per timed run (ms), equally many, `rounds` equal rounds in order.
        rounds: how many rounds the runs were taken in (baseline and candidate alternate between rounds).

    Returns:
        ``baseline_ms``, ``candidate_ms`` (interquartile means, ms), ``speedup`` (their ratio),
        ``noise_band`` ([min, max] of the per-round speedups), ``runs`` (runs per kernel).

    Raises:
        TimingError: the runs are malformed (the candidate's process reports them; treat as a failed timing).
    """
    base, cand = _runs(baseline_runs, "baseline runs"), _runs(candidate_runs, "candidate runs")
    if len(base) != len(cand) or rounds < 1 or len(base) % rounds:
        raise TimingError(f"{len(base)} baseline and {len(cand)} candidate runs do not make {rounds} equal rounds")
    per = len(base) // rounds
    ratios = sorted(interquartile_mean(base[i:i + per]) / interquartile_mean(cand[i:i + per])
                    for i in range(0, len(base), per))
    b, c = interquartile_mean(base), interquartile_mean(cand)
    return {"baseline_ms": b, "candidate_ms": c, "speedup": b / c, "noise_band": [ratios[0], ratios[-1]],
            "runs": len(cand)}


#: How much longer (ms, lower quartile over the runs) the candidate's graph may take outside its own in-graph events
#: than the baseline's before its in-graph times are set aside. Outside those events lie the graph's launch and
#: whatever the graph does after its end event: work captured there (e.g. by setting the capture's dependencies back
#: to the start event, so the end event no longer waits for the kernel) runs untimed by the in-graph events, but not
#: by the events around the call. An honest copy of the baseline stays within one timer tick of it; work moved past
#: the end event costs at least a kernel's launch, microseconds (benchmarks/attacks.py measures both).
GAP_SLACK_MS = 0.0005


def _lower_quartile(values: list[float]) -> float:
    return sorted(values)[len(values) // 4]


def choose_runs(timed: dict) -> tuple[list, list, str | None]:
    """The runs of one config's timing result to summarize, and a note where they are not the usual ones.

    `timed` holds ``baseline_runs_ms`` and ``candidate_runs_ms`` (events inside the graphs where both graphs have
    them, else events around each call) and, from the same runs, ``baseline_outer_runs_ms`` and
    ``candidate_outer_runs_ms`` (events around each call). Where the candidate's lower quartile of (outer - inner)
    exceeds the baseline's by more than `GAP_SLACK_MS`, both kernels' outer times are used: they include the launch
    latency, which compresses speedups of kernels of a few µs, but leave no work of the candidate untimed. Not a
    penalty: a graph of many nodes may take longer to launch than the baseline's (not measured), and is then only
    timed less finely. (Lower quartile, not median: work left outside the events is there in every run, a late
    launch only in some, and the host can delay a launch in many runs of one grading.) Results without outer runs
    are summarized as they are.

    Raises:
        TimingError: the runs are malformed.
    """
    base, cand = timed.get("baseline_runs_ms"), timed.get("candidate_runs_ms")
    base_outer, cand_outer = timed.get("baseline_outer_runs_ms"), timed.get("candidate_outer_runs_ms")
    if base_outer is None and cand_outer is None:
        return base, cand, None
    b, c = _runs(base, "baseline runs"), _runs(cand, "candidate runs")
    bo, co = _runs(base_outer, "baseline outer runs"), _runs(cand_outer, "candidate outer runs")
    if not len(b) == len(c) == len(bo) == len(co):
        raise TimingError("inner and outer runs differ in number")
    gap = _lower_quartile([o - i for o, i in zip(co, c)]) - _lower_quartile([o - i for o, i in zip(bo, b)])
    if gap > GAP_SLACK_MS:
        return bo, co, (f"the candidate's graph takes {gap * 1000:.2f} µs longer outside its own timing events than "
                        f"the baseline's: timed by events around each call instead, launch latency included")
    return b, c, None
