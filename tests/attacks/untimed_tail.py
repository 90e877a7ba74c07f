"""Attack: work left outside the timed window of a CUDA graph. While the harness captures the call between its
start and end event nodes, the candidate launches its kernel and then sets the capture stream's dependencies back
(cudaStreamUpdateCaptureDependencies): the end event no longer waits for the kernel, so the in-graph events time
nearly nothing, while the synchronize after each replay still waits for the right output.

Defence: `untimed_work_outer_events` (events around each call are recorded beside the in-graph ones; where the
candidate's graph spends longer outside its own events than the baseline's, both kernels are timed by the outer
events, and the speedup is about 1, not 5).
Honest twin: a graph with the baseline's launch gap keeps its in-graph times (below, second half).
GPU twin: benchmarks/attacks.py, ``untimed_tail`` (benchmarks/kernels/attack_untimed_tail.py), on the H200; here
the harness's timing result is fabricated as that attack made it look.
"""
import pytest


def test_work_left_outside_the_in_graph_events_is_timed_by_the_outer_events(fake_grader):
    # The candidate's in-graph window says 0.01 ms, but its graph takes 0.05 ms more outside its own events than
    # the baseline's does (1 µs launch for both): the outer events time both, and the speedup is ~1, not 5.
    extra = {"baseline_outer_runs_ms": [0.051] * 100, "candidate_outer_runs_ms": [0.061] * 100}
    times = [(0.05, 0.01)] * 5
    grade = fake_grader(times, extra=extra).grade(fake_grader.task.root, seed=3)
    assert grade.correct and grade.speedup == pytest.approx(0.051 / 0.061, rel=1e-3)
    assert "outside its own timing events" in grade.configs[0]["timing_mode"]
    # An honest graph (the same launch gap as the baseline's) keeps its in-graph times.
    extra = {"baseline_outer_runs_ms": [0.051] * 100,
             "candidate_outer_runs_ms": [t + 0.001 for t in fake_grader.runs(0.01)]}
    grade = fake_grader(times, extra=extra, work="honest").grade(fake_grader.task.root, seed=3)
    assert grade.speedup == pytest.approx(5.0, rel=1e-3) and grade.configs[0]["timing_mode"] == "cuda-graph"
