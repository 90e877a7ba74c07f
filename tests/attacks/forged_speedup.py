"""Attack: the candidate's kernels are the baseline's, but code in its own process rewrites the harness's timing (it
replaces ``time_pair`` in the harness module, or slows the baseline's runs from a thread) so that it reads 1.5x
faster; the static check is off.

Defence: `speedup_cross_check` (a measured speedup more than 2% above 1 must agree, within 25%, with the ratio of the
device times Nsight Compute saw for the baseline's and the candidate's checked calls; else it earns nothing and the
performance stage says why). The threshold is fixed: a forged result could otherwise widen its own per-round band to
be judged noise (review, 2026-12-01). The report used here is the real one of this attack on the H200 (2026-12-01; graded
there 120.0 with the speedup withheld, benchmarks/results/README.md).
Honest twin: a 2x speedup whose kernels the profiler saw take half the baseline's time stands.
"""
from pathlib import Path

from kernelgym.grader.observer import parse_report, split

DATA = Path(__file__).resolve().parents[1] / "data" / "ncu"
N = 5


def test_forged_speedup_is_withheld(observed_grader):
    forged = split(parse_report((DATA / "rmsnorm_forged_timing.csv").read_text()), N)
    baseline = split(parse_report((DATA / "rmsnorm_baseline.csv").read_text()), N)
    g = observed_grader([(0.075, 0.05)] * N, forged, baseline)
    grade = g.grade(g.task.root, seed=1)
    assert grade.correct and grade.score == 120.0 and grade.speedup is None
    assert grade.checks["speedup_cross_check"] == "failed" and grade.stages[2].passed is False
    assert "profiler" in "\n".join(grade.stages[2].messages)


def test_honest_twin_speedup_supported_by_the_profiler_stands(observed_grader, observation):
    g = observed_grader([(0.1, 0.05)] * N, observation([[("rmsnorm_kernel", 2000.0)]] * N),
                        observation([[("rmsnorm_kernel", 4000.0)]] * N))
    grade = g.grade(g.task.root, seed=1)
    assert grade.checks["speedup_cross_check"] == "passed" and grade.score > 300


def test_forged_speedup_with_a_wide_noise_band_is_withheld_too(observed_grader):
    """Two very fast and two very slow rounds among ten: the interquartile mean keeps the 3x, the band spans 0.03-75x
    (review, 2026-12-01)."""
    forged = split(parse_report((DATA / "rmsnorm_forged_timing.csv").read_text()), N)
    baseline = split(parse_report((DATA / "rmsnorm_baseline.csv").read_text()), N)
    t = 0.05 / 3
    rounds = [t / 100] * 2 + [t * 100] * 2 + [t] * 6
    runs = [r for r in rounds for _ in range(10)]
    g = observed_grader([(0.05, t)] * N, forged, baseline, extra={"candidate_runs_ms": runs})
    grade = g.grade(g.task.root, seed=1)
    assert grade.speedup is None and grade.score == 120.0, grade.summary()
    assert grade.checks["speedup_cross_check"] == "failed"
