"""Attack: the candidate's process (which the timing runs in) writes its own timing result: per-run times that are
strings, Inf, negative, missing or one short, so large that sums overflow, a config list that is not one, a missing
stage; or claims success with ``"ok": "yes"``.

Defence: `timing_numbers_validated` (the parent parses the result, checks every run time is a finite positive
number in equal rounds, and computes the statistics itself; a malformed result fails the performance stage only,
never the env, and never earns a speedup).
Honest twin: a well-formed result of the same grading is summarized (tests/test_performance.py).
"""
import pytest


@pytest.mark.parametrize("bad", [{"baseline_runs_ms": ["fast"] * 100}, {"baseline_runs_ms": [float("inf")] * 100},
                                 {"candidate_runs_ms": [-1.0] * 100}, {"candidate_runs_ms": []},
                                 {"candidate_runs_ms": [0.05] * 99}, {"baseline_runs_ms": "0.05"}, {"ok": "yes"},
                                 {"baseline_runs_ms": [1e300] * 100}])
def test_forged_or_malformed_times_earn_no_speedup_and_never_crash(fake_grader, monkeypatch, bad):
    g = fake_grader([(0.05, 0.05)] * 5)
    real = g._run_harness

    def forged(gdir, seed):
        check, timed = real(gdir, seed)
        timed["configs"][0].update(bad)
        return check, timed
    monkeypatch.setattr(g, "_run_harness", forged)
    grade = g.grade(fake_grader.task.root, seed=1)
    assert grade.correct and grade.stages[2].passed is False and grade.score == 120.0


def test_malformed_timing_result_fails_performance_only(fake_grader, monkeypatch):
    g = fake_grader([(0.05, 0.05)] * 5)
    real = g._run_harness
    monkeypatch.setattr(g, "_run_harness", lambda gdir, seed: (real(gdir, seed)[0], {"stage": "time", "configs": "x"}))
    grade = g.grade(fake_grader.task.root, seed=1)
    assert grade.correct and grade.stages[2].passed is False and grade.score == 120.0


def test_missing_stage_key_is_a_failed_stage(fake_grader, monkeypatch):
    g = fake_grader([(0.05, 0.05)] * 5)
    real = g._run_harness
    monkeypatch.setattr(g, "_run_harness", lambda gdir, seed: (real(gdir, seed)[0], {"configs": []}))
    assert g.grade(fake_grader.task.root, seed=1).score == 120.0
