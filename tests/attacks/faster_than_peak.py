"""Attack: a timing faster than the hardware can go (a timing hole, or a forged result): 64x1024 fp16 in 10 ns,
26 TB/s on an H200 whose peak is 4.8 TB/s; or a FLOP rate above the config's dtype's peak.

Defence: `roofline_ceiling` (the grading earns no speedup: a measurement error, not a speedup).
Honest twin: the same grading at plausible times keeps its speedup (tests/test_performance.py,
test_speedup_is_mean_of_per_config_ratios).
"""


def test_faster_than_peak_is_a_measurement_error_without_speedup(fake_grader):
    times = [(0.05, 0.05)] * 4 + [(0.5, 0.00001)]  # 64x1024 in 10 ns: 26 TB/s, far above the H200's peak
    grade = fake_grader(times).grade(fake_grader.task.root, seed=3)
    assert grade.correct and grade.stages[2].passed is False
    assert "measurement error" in "\n".join(grade.stages[2].messages)
    assert grade.speedup is None and grade.score == 120.0


def test_a_flop_rate_above_the_dtypes_peak_is_flagged(fake_grader):
    # Config dtypes are torch names (float16); the profile's peaks are keyed fp16/bf16/fp32. A profile whose fp16
    # peak is tiny must flag the float16 configs (the lookup used to miss and fall back to the largest peak).
    slow_fp16 = fake_grader.h200.model_copy(update={"peak_tflops": {"fp32": 1e6, "fp16": 1e-9, "bf16": 1e6}})
    grade = fake_grader([(0.05, 0.025)] * 5, hardware=slow_fp16).grade(fake_grader.task.root, seed=3)
    text = "\n".join(grade.stages[2].messages)
    assert grade.speedup is None and "TFLOP/s is above" in text and "GB/s is above" not in text
