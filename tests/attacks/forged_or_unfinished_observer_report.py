"""Attack: the candidate tampers with the observed run itself: it launches the harness's marker kernel to shift which
kernels count as which call, or kills the profiler (its frontend runs in the same sandbox) before the report lists a
library kernel, or leaves no report.

Defence: `observer_report_complete` (the report must hold exactly one marker per config plus two, the observed check
must have succeeded on every config and the profiler must have exited 0; otherwise the grading fails, since only the
candidate's code could have made the difference once the pristine baseline was observed on the same machine).
Honest twin: a complete report passes (tests/test_observer.py; the baseline's report in
library_kernels_beside_token_kernel.py).
"""
from pathlib import Path

import pytest

from kernelgym.grader.observer import Kernel, ObserverError, parse_report, split

DATA = Path(__file__).resolve().parents[1] / "data" / "ncu"
N = 5


def test_an_extra_or_missing_marker_is_refused():
    kernels = parse_report((DATA / "rmsnorm_baseline.csv").read_text())
    with pytest.raises(ObserverError):
        split(kernels[:8] + [Kernel("at::<unnamed>::spin_kernel(long)", 1e3)] + kernels[8:], N)
    with pytest.raises(ObserverError):
        split(kernels[:-1], N)


@pytest.mark.parametrize("why", ["the profiler exited with code -9", "the observed run left no result",
                                 "the observed run launched 8 marker kernels where 7 were expected"])
def test_an_unusable_observed_run_fails_the_grading(observed_grader, observation, why):
    # The baseline was observed on the same machine: the failure is the candidate's.
    g = observed_grader([(0.05, 0.05)] * N, ObserverError(why), observation([[("rmsnorm_kernel", 4e3)]] * N))
    grade = g.grade(g.task.root, seed=1)
    assert not grade.correct and grade.score == 20.0 and grade.checks["observer"] == f"failed: {why}"
    assert why in "\n".join(grade.stages[1].messages)
