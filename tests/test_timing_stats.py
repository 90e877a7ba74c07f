"""The parent's statistics of timed runs (timing_stats.py)."""
import pytest

from kernelgym.grader.timing_stats import TimingError, interquartile_mean, summarize


def test_interquartile_mean_ignores_the_outer_quarters():
    assert interquartile_mean([1.0, 2.0, 3.0, 100.0]) == pytest.approx(2.5)
    assert interquartile_mean([5.0]) == 5.0
    assert interquartile_mean([0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1e9]) == 1.0


def test_interquartile_mean_resolves_below_the_timer_tick():
    # Runs quantized to a 16 ns tick around 4.76 us: medians of two halves land on whole ticks, the IQM between.
    tick = 0.000016
    a = [0.00476 + tick * (i % 3) for i in range(100)]   # ticks 0,1,2 equally often: centre 1 tick
    b = [0.00476 + tick * (i % 2) for i in range(100)]   # ticks 0,1: centre half a tick
    assert interquartile_mean(a) - interquartile_mean(b) == pytest.approx(tick / 2, rel=0.2)


def test_summarize_speedup_and_noise_band():
    base = [2.0] * 20
    cand = [1.0] * 10 + [0.8] * 10  # two rounds: speedups 2.0 and 2.5
    s = summarize(base, cand, rounds=2)
    assert s["noise_band"] == pytest.approx([2.0, 2.5])
    assert s["baseline_ms"] == 2.0 and s["runs"] == 20
    assert s["speedup"] == pytest.approx(s["baseline_ms"] / s["candidate_ms"])
    assert 2.0 <= s["speedup"] <= 2.5


def test_one_outlier_run_does_not_move_the_result():
    base, cand = [1.0] * 100, [1.0] * 99 + [50.0]  # one run preempted
    assert summarize(base, cand, rounds=10)["speedup"] == 1.0


@pytest.mark.parametrize("base,cand,rounds", [
    ([1.0] * 10, [1.0] * 9, 1),          # unequal counts
    ([1.0] * 10, [1.0] * 10, 3),         # not equal rounds
    ([1.0] * 10, [0.0] * 10, 1),         # zero time
    ([1.0] * 10, [float("nan")] * 10, 1),
    ([1.0] * 10, ["x"] * 10, 1),
    ([1.0] * 10, None, 1),
    ([], [], 1),
])
def test_malformed_runs_raise_timing_error(base, cand, rounds):
    with pytest.raises(TimingError):
        summarize(base, cand, rounds)


def test_untimed_work_is_work_in_every_run_not_a_late_launch_in_some():
    from kernelgym.grader.timing_stats import choose_runs
    inner = [0.005] * 100
    base = {"baseline_runs_ms": inner, "baseline_outer_runs_ms": [0.0076] * 100, "candidate_runs_ms": inner}
    # 40% of the candidate's runs launched 20 µs late (the host was away): not work outside its events
    late = [0.0076 + (0.02 if i % 5 < 2 else 0.0) for i in range(100)]
    assert choose_runs({**base, "candidate_outer_runs_ms": late}) == (inner, inner, None)
    # every run 1.6 µs longer outside the events (the attack measured on the H200): both timed by the outer events
    b, c, note = choose_runs({**base, "candidate_outer_runs_ms": [0.0092] * 100})
    assert b == [0.0076] * 100 and c == [0.0092] * 100 and "outside its own timing events" in note
    assert choose_runs({"baseline_runs_ms": inner, "candidate_runs_ms": inner}) == (inner, inner, None)
    with pytest.raises(TimingError):
        choose_runs({**base, "candidate_outer_runs_ms": [0.0076] * 99})
