"""The grader's fast path (a warm worker that prepared the grading, outputs compared while the harness runs) gives the
same verdicts as the plain path (a fresh process, every comparison at the end), kernel by kernel, on the interpreter."""
import shutil

import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()
KERNELS = {
    "baseline": BASELINE,
    "wrong": BASELINE.replace("y = x * rstd * w", "y = x * rstd * w * 1.5"),
    "compile_error": BASELINE.replace("def rmsnorm(", "def rmsnorm(((", 1),
    "crash": BASELINE.replace('    y = torch.empty_like(x2)', '    raise RuntimeError("boom")'),
    "undefined_name_in_kernel": BASELINE.replace("acc += x * x", "acc += x * undefined_name"),
}


def _verdict(grade):
    return (grade.score, [s.passed for s in grade.stages], [c.get("correct") for c in grade.configs])


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_fast_and_plain_paths_give_the_same_verdict(tmp_path, require_bwrap, name):
    assert KERNELS[name] != BASELINE or name == "baseline"  # each mutation applies
    ws = tmp_path / "ws"
    ws.mkdir()
    for rel in TASK.public_files():
        shutil.copy(TASK.root / rel, ws / rel)
    (ws / "kernel.py").write_text(KERNELS[name])
    hw = detect_profile("cpu-interpreter")
    fast = Grader(TASK, hw, tmp_path / "fast", GraderConfig(warm_worker=True, early_compare=True))
    fast.start_worker(seed=5)
    try:
        fast_grade = fast.grade(ws, seed=5)
    finally:
        fast.stop_worker()
    plain = Grader(TASK, hw, tmp_path / "plain", GraderConfig(warm_worker=False, early_compare=False))
    plain_grade = plain.grade(ws, seed=5)
    assert _verdict(fast_grade) == _verdict(plain_grade)
    expected = {"baseline": 120.0, "wrong": 20.0, "crash": 20.0, "compile_error": 0.0,
                # The interpreter runs kernels as Python: an undefined name fails when the kernel runs, not to compile.
                "undefined_name_in_kernel": 20.0}
    assert plain_grade.score == expected[name], plain_grade.summary()
