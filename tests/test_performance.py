"""The performance stage's logic, by configuration (no GPU here): the harness's results are fabricated
(`fake_grader` in conftest.py), the parent's arithmetic, roofline numbers and output comparisons are real. Attacks on
the timing live in tests/attacks/ (faster_than_peak.py, forged_timing_result.py, untimed_tail.py,
cheap_while_timed.py, forged_outputs_early.py)."""
import json
import math
import time

import pytest

from kernelgym.grader.protocol import OUTPUTS


def test_speedup_is_mean_of_per_config_ratios(fake_grader):
    times = [(0.05, 0.025), (0.05, 0.05), (0.06, 0.03), (0.1, 0.1), (0.5, 0.25)]  # ratios 2, 1, 2, 1, 2
    grade = fake_grader(times).grade(fake_grader.task.root, seed=3)
    assert grade.correct and grade.stages[2].passed
    assert grade.speedup == pytest.approx(1.6, rel=1e-3) and grade.score == pytest.approx(280.0, rel=1e-3)
    assert grade.speedup_geomean == pytest.approx(math.exp((3 * math.log(2)) / 5), rel=1e-3)
    last = grade.configs[-1]
    assert last["noise_band"] == pytest.approx([1.98, 2.02])
    # 64 x 1024 fp16: 2*64*1024*2 + 1024*2 bytes in 0.25 ms
    assert last["achieved_gbps"] == pytest.approx((2 * 64 * 1024 * 2 + 1024 * 2) / last["candidate_ms"] / 1e6)
    assert last["candidate_ms"] == pytest.approx(0.25, rel=1e-3) and last["runs"] == 100
    assert last["bandwidth_fraction"] == pytest.approx(last["achieved_gbps"] / fake_grader.h200.peak_bandwidth_gbps)
    json.dumps(grade.to_dict())  # info["grade"] must be JSON-serializable


def test_outputs_are_compared_while_the_candidate_still_runs(fake_grader, monkeypatch):
    g = fake_grader([(0.05, 0.025)] * 5)
    files_written = g._run_harness
    seen_before_end = []

    def slow_harness(gdir, seed):
        result = files_written(gdir, seed)
        deadline = time.monotonic() + 30
        while len(g.session.compare_log) < 10 and time.monotonic() < deadline:  # 5 check + 5 timed-path outputs
            time.sleep(0.01)
        seen_before_end.append(len(g.session.compare_log))
        return result
    monkeypatch.setattr(g, "_run_harness", slow_harness)
    grade = g.grade(fake_grader.task.root, seed=5)
    assert seen_before_end == [10]  # all compared by the early thread, before the "process" ended
    assert grade.correct and grade.speedup == pytest.approx(2.0, rel=1e-3)


def test_a_file_caught_half_written_is_read_again_at_the_end(fake_grader, monkeypatch):
    # A writer that is not atomic: the early comparison may see a torn file; the final one must see the whole.
    g = fake_grader([(0.05, 0.025)] * 5)
    files_written = g._run_harness

    def torn_then_whole(gdir, seed):
        (gdir / OUTPUTS).write_bytes(b"PK\x03\x04 torn")
        time.sleep(0.3)  # the early thread finds the torn file meanwhile
        (gdir / OUTPUTS).unlink()
        return files_written(gdir, seed)
    monkeypatch.setattr(g, "_run_harness", torn_then_whole)
    grade = g.grade(fake_grader.task.root, seed=6)
    assert grade.correct, grade.summary()


@pytest.mark.parametrize("call_ms, budget_ms, expected", [
    (0.005, 100.0, 100),   # a few µs: every run
    (1.0, 100.0, 100),     # exactly the budget
    (2.5, 100.0, 40),      # a large GEMM: 4 runs a round
    (60.0, 100.0, 20),     # longer than the budget: 2 runs a round, never fewer
    (2.5, 0.0, 100),       # the budget off
    (None, 100.0, 100),    # no call timed (not on a GPU)
    (float("nan"), 100.0, 100),
    (0.0, 100.0, 100),
])
def test_timed_runs_shrink_only_where_the_baselines_runs_exceed_the_budget(call_ms, budget_ms, expected):
    from kernelgym.grader.protocol import timed_reps
    assert timed_reps(100, 10, call_ms, budget_ms) == expected


def test_the_request_carries_the_budget_and_the_grade_says_how_many_runs(fake_grader):
    from kernelgym.grader.protocol import Request
    g = fake_grader([(0.05, 0.05)] * 5, extra={"baseline_runs_ms": [0.05] * 40, "candidate_runs_ms": [0.05] * 40})
    request = g._request(g.work_dir / "g", seed=1, timed=True)
    assert request.timed_ms_per_config == g.config.timed_ms_per_config == 100.0
    assert Request.from_json(request.to_json()).timed_ms_per_config == 100.0
    grade = g.grade(fake_grader.task.root, seed=2)
    perf = grade.stages[2]
    assert perf.passed and grade.configs[0]["runs"] == 40
    assert "40 timed runs each (fewer than 100 where 100 of the baseline's would take over 100 ms)" in perf.messages[0]
    full = fake_grader([(0.05, 0.05)] * 5, work="full").grade(fake_grader.task.root, seed=2)
    assert "10 warm-up + 100 timed runs each, caches" in full.stages[2].messages[0]


@pytest.mark.parametrize("budget_ms", [float("inf"), float("nan"), -5.0])
def test_a_budget_that_is_no_number_of_ms_leaves_every_run(budget_ms):
    from kernelgym.grader.protocol import timed_reps
    assert timed_reps(100, 10, 2.5, budget_ms) == 100


def test_the_message_names_no_cut_where_the_rounds_alone_round_the_runs_down(fake_grader):
    g = fake_grader([(0.05, 0.05)] * 5, extra={"baseline_runs_ms": [0.05] * 99, "candidate_runs_ms": [0.05] * 99})
    g.config.rounds = 3  # 100 // 3 * 3 = 99 runs, none cut by the budget
    message = g.grade(fake_grader.task.root, seed=2).stages[2].messages[0]
    assert "99 timed runs each, caches" in message and "fewer" not in message
