"""The grader's gates, on the CPU interpreter: 0 for no compile, 20 for wrong, 120 for the baseline; the score; the
warm worker's fast path; the elementwise bound. Attacks on the grader, and the defences they test, are in
tests/attacks/ (kernelgym/grader/defences.py lists them)."""
import math
import re

import pytest
import torch

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig, arena_score
from kernelgym.grader.compare import compare_outputs
from kernelgym.hardware import detect_profile
from kernelgym.task import Tolerance

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()


def test_baseline_scores_120_on_interpreter(grade):
    g = grade(BASELINE)
    assert g.score == 120.0 and g.compiled and g.correct
    assert g.stages[2].passed is None and "not measured on the CPU interpreter" in g.stages[2].messages[0]
    assert all(c["correct"] for c in g.configs) and g.speedup is None
    assert g.checks["dynamic_check"] == "passed"


def test_syntax_error_scores_0(grade):
    g = grade(BASELINE.replace("def rmsnorm(", "def rmsnorm(((", 1))
    assert g.score == 0.0 and not g.compiled
    assert "SyntaxError" in "\n".join(g.stages[0].messages)


def test_wrong_output_scores_20(grade):
    g = grade(BASELINE.replace("y = x * rstd * w", "y = 2.0 * x * rstd * w"))
    assert g.score == 20.0 and g.compiled and not g.correct
    assert any("outside atol" in (c["error"] or "") for c in g.configs)


@pytest.mark.parametrize("compiled,correct,speedup,expected", [
    (False, True, 5.0, 0.0), (True, False, 5.0, 20.0), (True, True, None, 120.0), (True, True, 1.0, 220.0),
    (True, True, 2.5, 370.0)])
def test_arena_score(compiled, correct, speedup, expected):
    assert arena_score(compiled, correct, speedup) == expected


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_arena_score_rejects_bad_speedup(bad):
    with pytest.raises(ValueError, match="finite number"):
        arena_score(True, True, bad)


TOL = Tolerance(atol=1e-2, rtol=1e-2)
CFG = {"dtype": "float16"}


def test_compare_bounds_each_element_by_atol_plus_rtol():
    # NaN, Inf, tiny values, shapes and dtypes: tests/attacks/ (nan_output.py, zero_output_small_values.py, ...).
    ref = torch.randn(4, 8)
    off = ref.half()
    off[2, 3] += 1.0  # far outside atol + rtol * |ref|
    ok, msg, err = compare_outputs(off, ref, CFG, TOL)
    assert not ok and "1/32 elements outside" in msg and "flat index 19" in msg and err == pytest.approx(1.0, abs=0.01)
    edge = ref.half().float()
    edge[0, 0] = ref[0, 0] + TOL.atol + TOL.rtol * abs(float(ref[0, 0])) * 0.5  # inside the bound: passes
    assert compare_outputs(edge.half(), ref, CFG, TOL)[0]
    zeros = torch.zeros(4, 8)
    assert compare_outputs(torch.full((4, 8), 1e-3, dtype=torch.float16), zeros, CFG, TOL)[0]  # within atol


@pytest.mark.timeout(300)
def test_prepared_grading_matches_a_cold_one(tmp_path, require_bwrap, make_workspace):
    ws = make_workspace()
    hw = detect_profile("cpu-interpreter")
    cold = Grader(TASK, hw, tmp_path / "cold", GraderConfig(warm_worker=False)).grade(ws, seed=11)
    grader = Grader(TASK, hw, tmp_path / "warm")
    grader.start_worker(seed=11)
    prepared_dir = grader._prepared.gdir
    warm = grader.grade(ws, seed=11)
    log = (prepared_dir / "harness.log").read_text()
    assert "[harness] prepared" in log
    # Each whole phase logs the harness process's CPU seconds so far (benchmarks/throughput.py reads them), growing.
    cpu = [float(m) for m in re.findall(r"^\[harness\] cpu\.(?:prepare|import|check) ([0-9.]+) s$", log, re.M)]
    assert len(cpu) == 3 and 0 <= cpu[0] <= cpu[1] <= cpu[2] and cpu[2] > 0, log  # a forked harness starts at 0
    assert grader.session.gdir == prepared_dir  # graded where prepared (its copy of kernel.py is pruned since)
    assert warm.score == cold.score == 120.0
    assert [c["max_abs_err"] for c in warm.configs] == [c["max_abs_err"] for c in cold.configs]
    # Prepared for another seed: still graded, on the seed asked for.
    grader.start_worker(seed=12)
    other = grader.grade(ws, seed=11)
    assert [c["max_abs_err"] for c in other.configs] == [c["max_abs_err"] for c in cold.configs]


def test_a_grader_dropped_without_stop_leaves_no_worker(tmp_path, require_bwrap):
    import gc
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading")
    grader.start_worker(seed=1)
    proc = grader.worker.proc
    assert proc.poll() is None
    grader._prepared.references.wait()  # the reference thread is done (seconds)
    del grader
    gc.collect()
    assert proc.poll() is not None  # killed and reaped by the worker's finalizer


SLOW_EXIT = BASELINE + '''
import os as _os, time as _time
_real_exit = _os._exit
_os._exit = lambda code: (_time.sleep(60), _real_exit(code))  # the process lingers after its results are written
'''


@pytest.mark.timeout(120)
def test_the_prepared_worker_answers_when_the_results_are_written_not_at_exit(tmp_path, require_bwrap, make_workspace):
    # A CUDA process takes hundreds of ms to exit; the reward must not wait for that (here: a 60 s exit).
    ws = make_workspace(SLOW_EXIT)
    # The static check would refuse the os._exit patch that stands in for a slow CUDA teardown.
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading",
                    GraderConfig(timeout_s=40.0, static_check=False))
    grader.start_worker(seed=6)
    g = grader.grade(ws, seed=6)
    assert g.score == 120.0 and g.elapsed_s < 30, g.summary()


def test_a_prepared_reference_compares_exactly_as_the_plain_one():
    from kernelgym.grader.compare import prepare_reference
    ref = torch.randn(16, 32)
    off = ref.half()
    off[3, 4] += 1.0
    nan = ref.half()
    nan[0, 0] = float("nan")
    for out in (ref.half(), off, nan, torch.zeros(16, 32, dtype=torch.float16), ref.half()[:2], ref.float()):
        assert compare_outputs(out, prepare_reference(ref, TOL), CFG, TOL) == compare_outputs(out, ref, CFG, TOL)


def test_the_harness_limit_is_derived_from_the_task_unless_given(tmp_path):
    """A hung kernel fails within minutes (issue 16): the limit of one harness process follows the configs graded."""
    from kernelgym.discovery import get_task
    from kernelgym.grader import Grader, GraderConfig
    from kernelgym.grader.grader import COMPILE_BUDGET_S, PER_CONFIG_S, TIMEOUT_FLOOR_S
    from kernelgym.hardware import all_profiles
    task, profiles = get_task("triton-rmsnorm"), all_profiles()
    cpu = Grader(task, profiles["cpu-interpreter"], tmp_path / "a")
    assert cpu.timeout_s == max(TIMEOUT_FLOOR_S, COMPILE_BUDGET_S + PER_CONFIG_S["interpreter"] * len(cpu.configs))
    gpu = Grader(task, profiles["h200"], tmp_path / "b")
    assert gpu.timeout_s == max(TIMEOUT_FLOOR_S, COMPILE_BUDGET_S + PER_CONFIG_S["gpu"] * len(gpu.configs)) < 900
    assert Grader(task, profiles["h200"], tmp_path / "c", GraderConfig(timeout_s=8.0)).timeout_s == 8.0


LITTERING = BASELINE.replace("import torch\n", "import os\nimport torch\n", 1) + '''
with open("junk.bin", "wb") as _f:
    _f.write(b"x" * (3 << 20))
with open("notes.log", "w") as _f:
    _f.write("kept")
os.makedirs("cache/deep", exist_ok=True)
os.symlink("/etc", "etc-link")
for _i in range(50):
    with open(f"extra{_i}.json", "w") as _f:
        _f.write("{}")
_here = os.getcwd()
for _ in range(3000):  # deeper than Python 3.11's recursive rmtree can go
    os.mkdir("d")
    os.chdir("d")
os.chdir(_here)
'''


def test_a_read_grade_leaves_only_small_logs_and_results_in_its_directory(tmp_path, require_bwrap, make_workspace):
    """Grading directories held every grading's output tensors and whatever the candidate wrote there, never
    removed (hundreds of MB a grading for large configs; a review left 3 GiB). Once the grade is read, only the
    harness's own log and result files stay (the candidate's 50 .json files go); a link is removed, not followed; a
    folder 3000 deep is removed too (Python 3.11's rmtree raised RecursionError on it)."""
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(static_check=False))
    g = grader.grade(make_workspace(LITTERING), seed=3)
    assert g.score == 120.0, g.summary()
    left = sorted(p.name for p in grader.session.gdir.iterdir())
    assert left == ["check_result.json"], left
    assert (tmp_path / "grading").exists() and __import__("os").path.isdir("/etc")
