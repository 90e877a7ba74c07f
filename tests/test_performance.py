"""The performance stage's logic, by configuration (no GPU here): the harness's results are fabricated, the
parent's arithmetic, roofline check and timed-output verification are real."""
import json
import math
import os
import time

import pytest
import torch

from kernelgym.grader import Grader
from kernelgym.grader.protocol import timed_output_name, verify_seed
from kernelgym.grader.reference import load_reference
from kernelgym.grader.session import GradingSession
from kernelgym.hardware import all_profiles
from kernelgym.discovery import get_task

TASK = get_task("triton-rmsnorm")
H200 = all_profiles()["h200"]
# Small configs keep the parent's CPU references cheap; the arithmetic does not depend on size.
CONFIGS = [{"rows": 4, "hidden": 128, "dtype": "float16"}, {"rows": 8, "hidden": 256, "dtype": "bfloat16"},
           {"rows": 3, "hidden": 1000, "dtype": "float16"}, {"rows": 16, "hidden": 512, "dtype": "bfloat16"},
           {"rows": 64, "hidden": 1024, "dtype": "float16"}]


def save(obj, path):
    torch.save(obj, f"{path}.part")
    os.replace(f"{path}.part", path)


def runs(t):
    """100 candidate runs in 10 rounds of 10 whose per-round speedups are 1% either side of baseline / t."""
    return [t / (0.99 if r % 2 else 1.01) for r in range(10) for _ in range(10)]


def fake_grader(tmp_path, monkeypatch, times, wrong_timed=False, hardware=H200, extra=None):
    """A Grader on a GPU profile whose harness 'ran' the baseline kernel and reported `times` (ms pairs), with
    `extra` fields added to every config's timing result."""
    reference, builder = load_reference(TASK)
    g = Grader(TASK, hardware, tmp_path / "grading", configs=CONFIGS)

    def run_harness(gdir, seed):
        outs, touts = {}, {}
        for i, cfg in enumerate(g.configs):
            x, w, eps = builder(cfg, seed + i, "cpu")
            outs[f"{i}/out"] = reference(x, w, eps).to(x.dtype)
            x, w, eps = builder(cfg, verify_seed(seed, i), "cpu")
            touts[i] = (reference(x, w, eps) * (0 if wrong_timed else 1)).to(x.dtype)
        save(outs, gdir / "outputs.pt")  # whole or not at all, as the harness writes them
        for i, out in touts.items():
            save({f"{i}/out": out}, gdir / timed_output_name(i))
        check = {"stage": "check", "ok": True, "error": None,
                 "configs": [{"config": c, "ok": True, "error": None} for c in g.configs]}
        timed = {"stage": "time", "ok": True, "persisting_l2_reset": True, "configs": [
            {"config": c, "ok": True, "baseline_runs_ms": [b] * 100, "candidate_runs_ms": runs(t),
             "baseline_mode": "cuda-graph", "candidate_mode": "cuda-graph", **(extra or {})}
            for c, (b, t) in zip(g.configs, times)]}
        return check, timed
    monkeypatch.setattr(g, "_run_harness", run_harness)
    return g


def test_speedup_is_mean_of_per_config_ratios(tmp_path, monkeypatch):
    times = [(0.05, 0.025), (0.05, 0.05), (0.06, 0.03), (0.1, 0.1), (0.5, 0.25)]  # ratios 2, 1, 2, 1, 2
    grade = fake_grader(tmp_path, monkeypatch, times).grade(TASK.root, seed=3)
    assert grade.correct and grade.stages[2].passed
    assert grade.speedup == pytest.approx(1.6, rel=1e-3) and grade.score == pytest.approx(280.0, rel=1e-3)
    assert grade.speedup_geomean == pytest.approx(math.exp((3 * math.log(2)) / 5), rel=1e-3)
    last = grade.configs[-1]
    assert last["noise_band"] == pytest.approx([1.98, 2.02])
    # 64 x 1024 fp16: 2*64*1024*2 + 1024*2 bytes in 0.25 ms
    assert last["achieved_gbps"] == pytest.approx((2 * 64 * 1024 * 2 + 1024 * 2) / last["candidate_ms"] / 1e6)
    assert last["candidate_ms"] == pytest.approx(0.25, rel=1e-3) and last["runs"] == 100
    assert last["bandwidth_fraction"] == pytest.approx(last["achieved_gbps"] / H200.peak_bandwidth_gbps)
    json.dumps(grade.to_dict())  # info["grade"] must be JSON-serializable


def test_faster_than_peak_is_a_measurement_error_without_speedup(tmp_path, monkeypatch):
    times = [(0.05, 0.05)] * 4 + [(0.5, 0.00001)]  # 64x1024 in 10 ns: 26 TB/s, far above the H200's peak
    grade = fake_grader(tmp_path, monkeypatch, times).grade(TASK.root, seed=3)
    assert grade.correct and grade.stages[2].passed is False
    assert "measurement error" in "\n".join(grade.stages[2].messages)
    assert grade.speedup is None and grade.score == 120.0


def test_wrong_output_on_the_timed_path_fails_correctness(tmp_path, monkeypatch):
    grade = fake_grader(tmp_path, monkeypatch, [(0.05, 0.01)] * 5, wrong_timed=True).grade(TASK.root, seed=3)
    assert not grade.correct and grade.score == 20.0
    assert "timed path is wrong" in "\n".join(grade.stages[2].messages)


def test_malformed_timing_result_fails_performance_only(tmp_path, monkeypatch):
    g = fake_grader(tmp_path, monkeypatch, [(0.05, 0.05)] * 5)
    real = g._run_harness
    monkeypatch.setattr(g, "_run_harness", lambda gdir, seed: (real(gdir, seed)[0], {"stage": "time", "configs": "x"}))
    grade = g.grade(TASK.root, seed=1)
    assert grade.correct and grade.stages[2].passed is False and grade.score == 120.0


@pytest.mark.parametrize("bad", [{"baseline_runs_ms": ["fast"] * 100}, {"baseline_runs_ms": [float("inf")] * 100},
                                 {"candidate_runs_ms": [-1.0] * 100}, {"candidate_runs_ms": []},
                                 {"candidate_runs_ms": [0.05] * 99}, {"baseline_runs_ms": "0.05"}, {"ok": "yes"}])
def test_forged_or_malformed_times_earn_no_speedup_and_never_crash(tmp_path, monkeypatch, bad):
    g = fake_grader(tmp_path, monkeypatch, [(0.05, 0.05)] * 5)
    real = g._run_harness

    def forged(gdir, seed):
        check, timed = real(gdir, seed)
        timed["configs"][0].update(bad)
        return check, timed
    monkeypatch.setattr(g, "_run_harness", forged)
    grade = g.grade(TASK.root, seed=1)
    assert grade.correct and grade.stages[2].passed is False and grade.score == 120.0


def test_missing_stage_key_is_a_failed_stage(tmp_path, monkeypatch):
    g = fake_grader(tmp_path, monkeypatch, [(0.05, 0.05)] * 5)
    real = g._run_harness
    monkeypatch.setattr(g, "_run_harness", lambda gdir, seed: (real(gdir, seed)[0], {"configs": []}))
    assert g.grade(TASK.root, seed=1).score == 120.0


def test_outputs_are_compared_while_the_candidate_still_runs(tmp_path, monkeypatch):
    g = fake_grader(tmp_path, monkeypatch, [(0.05, 0.025)] * 5)
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
    grade = g.grade(TASK.root, seed=5)
    assert seen_before_end == [10]  # all compared by the early thread, before the "process" ended
    assert grade.correct and grade.speedup == pytest.approx(2.0, rel=1e-3)


def test_a_file_caught_half_written_is_read_again_at_the_end(tmp_path, monkeypatch):
    # A writer that is not atomic: the early comparison may see a torn file; the final one must see the whole.
    g = fake_grader(tmp_path, monkeypatch, [(0.05, 0.025)] * 5)
    files_written = g._run_harness

    def torn_then_whole(gdir, seed):
        (gdir / "outputs.pt").write_bytes(b"PK\x03\x04 torn")
        time.sleep(0.3)  # the early thread finds the torn file meanwhile
        (gdir / "outputs.pt").unlink()
        return files_written(gdir, seed)
    monkeypatch.setattr(g, "_run_harness", torn_then_whole)
    grade = g.grade(TASK.root, seed=6)
    assert grade.correct, grade.summary()


def test_a_wrong_timed_run_fails_correctness(tmp_path, monkeypatch):
    # The harness checks every timed run of the candidate against the baseline's output on the same inputs.
    extra = {"wrong_output": "timed run 7 (input set 2): the output differs from the baseline's"}
    grade = fake_grader(tmp_path, monkeypatch, [(0.05, 0.01)] * 5, extra=extra).grade(TASK.root, seed=3)
    assert not grade.correct and grade.score == 20.0 and grade.speedup is None
    assert "timed run 7" in "\n".join(grade.stages[2].messages)


def test_work_left_outside_the_in_graph_events_is_timed_by_the_outer_events(tmp_path, monkeypatch):
    # The candidate's in-graph window says 0.01 ms, but its graph takes 0.05 ms more outside its own events than
    # the baseline's does (1 µs launch for both): the outer events time both, and the speedup is ~1, not 5.
    extra = {"baseline_outer_runs_ms": [0.051] * 100, "candidate_outer_runs_ms": [0.061] * 100}
    times = [(0.05, 0.01)] * 5
    grade = fake_grader(tmp_path, monkeypatch, times, extra=extra).grade(TASK.root, seed=3)
    assert grade.correct and grade.speedup == pytest.approx(0.051 / 0.061, rel=1e-3)
    assert "outside its own timing events" in grade.configs[0]["timing_mode"]
    # An honest graph (the same launch gap as the baseline's) keeps its in-graph times.
    extra = {"baseline_outer_runs_ms": [0.051] * 100, "candidate_outer_runs_ms": [t + 0.001 for t in runs(0.01)]}
    grade = fake_grader(tmp_path / "honest", monkeypatch, times, extra=extra).grade(TASK.root, seed=3)
    assert grade.speedup == pytest.approx(5.0, rel=1e-3) and grade.configs[0]["timing_mode"] == "cuda-graph"


def test_a_flop_rate_above_the_dtypes_peak_is_flagged(tmp_path, monkeypatch):
    # Config dtypes are torch names (float16); the profile's peaks are keyed fp16/bf16/fp32. A profile whose fp16
    # peak is tiny must flag the float16 configs (the lookup used to miss and fall back to the largest peak).
    slow_fp16 = H200.model_copy(update={"peak_tflops": {"fp32": 1e6, "fp16": 1e-9, "bf16": 1e6}})
    grade = fake_grader(tmp_path, monkeypatch, [(0.05, 0.025)] * 5, hardware=slow_fp16).grade(TASK.root, seed=3)
    text = "\n".join(grade.stages[2].messages)
    assert grade.speedup is None and "TFLOP/s is above" in text and "GB/s is above" not in text


def test_configs_not_yet_compared_early_are_read_from_the_file_as_it_is_at_the_end(tmp_path):
    # The early comparison loaded outputs.pt (a candidate's own, right answers) and compared config 0 before the
    # candidate's process ended; the harness then replaced the file (zeros). Config 1, compared only at the end,
    # must be read from the new file, not from what was loaded early.
    reference, builder = load_reference(TASK)
    session = GradingSession.start(TASK, tmp_path, 3, CONFIGS[:2], timed=False, gpu=False, seen=False)
    path = tmp_path / "outputs.pt"
    right = {}
    for i, cfg in enumerate(session.configs):
        x, w, eps = builder(cfg, 3 + i, "cpu")
        right[f"{i}/out"] = reference(x, w, eps).to(x.dtype)
    save(right, path)
    assert session.compared(path, 0, 3, final=False)[0]
    time.sleep(0.01)  # a new ctime
    save({k: torch.zeros_like(v) for k, v in right.items()}, path)
    assert not session.compared(path, 1, 4)[0]  # never compared early: read from the file as it is now
    assert not session.compared(path, 0, 3)[0]  # compared early: compared again
