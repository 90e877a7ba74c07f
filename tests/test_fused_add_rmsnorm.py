"""The fused-add-rmsnorm task (two returned outputs) on the CPU interpreter: baseline and a known-faster kernel grade
120, a wrong second output or a missing tuple fail correctness with a message that says which, and the env starts."""
import shutil
from pathlib import Path

import gymnasium as gym
import pytest

import kernelgym  # noqa: F401 - registers the tasks
from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile

TASK = get_task("triton-fused-add-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()
FAST = (Path(__file__).resolve().parents[1] / "benchmarks" / "kernels" / "fused_add_rmsnorm_fast.py").read_text()
RETURN = "    return y.reshape(x.shape), r.reshape(x.shape)\n"


@pytest.fixture
def grade(tmp_path, require_bwrap):
    """grade(kernel_source) -> Grade of a fresh workspace (the task's public files) holding that kernel.py."""
    def _grade(source, static_check=True):
        ws = tmp_path / "ws"
        shutil.rmtree(ws, ignore_errors=True)
        ws.mkdir()
        for rel in TASK.public_files():
            shutil.copy(TASK.root / rel, ws / rel)
        (ws / "kernel.py").write_text(source)
        return Grader(TASK, detect_profile(), tmp_path / "grading", GraderConfig(warm_worker=False,
                                                                                    static_check=static_check)).grade(ws, seed=3)
    return _grade


def failures(g) -> str:
    return "\n".join([*g.stages[1].messages, *(c["error"] or "" for c in g.configs)])


def test_task_declares_two_returned_outputs():
    assert [(o.name, o.arg) for o in TASK.spec.outputs] == [("out", None), ("residual_out", None)]
    assert TASK.spec.difficulty == "easy" and len(TASK.spec.seen_configs) == 5
    assert any(c["hidden"] & (c["hidden"] - 1) for c in TASK.spec.interpreter_configs)  # a non-power-of-two hidden


def test_baseline_grades_120(grade):
    assert RETURN in BASELINE  # the edits below rely on it
    g = grade(BASELINE)
    assert g.compiled and g.correct and g.score == 120.0, failures(g)
    assert len(g.configs) == len(TASK.spec.interpreter_configs) and all(c["correct"] for c in g.configs)
    assert g.stages[2].passed is None and g.speedup is None


def test_fast_version_grades_120(grade):
    g = grade(FAST)
    assert g.compiled and g.correct and g.score == 120.0, failures(g)


def test_wrong_residual_out_fails_naming_it(grade):
    # Returning the input x itself is refused as aliasing; a fresh tensor with x's values fails the comparison.
    g = grade(BASELINE.replace(RETURN, "    return y.reshape(x.shape), x\n"))
    assert g.compiled and not g.correct and g.score == 20.0
    assert "output 'residual_out' shares memory with argument 0" in failures(g)
    g = grade(BASELINE.replace(RETURN, "    r.copy_(x2)\n    return y.reshape(x.shape), r.reshape(x.shape)\n"),
              static_check=False)
    assert g.compiled and not g.correct and g.score == 20.0
    assert "residual_out" in failures(g) and "outside atol" in failures(g)


def test_single_output_fails_asking_for_tuple_of_two(grade):
    g = grade(BASELINE.replace(RETURN, "    return y.reshape(x.shape)\n"))
    assert g.compiled and not g.correct and g.score == 20.0
    assert "tuple of 2" in failures(g) and "residual_out" in failures(g)


def test_gym_make_resets_and_prompt_names_both_outputs(tmp_path, require_bwrap):
    env = gym.make("KernelArena/triton-fused-add-rmsnorm-v0", run_dir=tmp_path, hardware="cpu-interpreter")
    try:
        obs, info = env.reset(seed=0)
        assert env.observation_space.contains(obs) and info["grade"] == {}
        prompt = obs["prompt"]
        for part in ("fused_add_rmsnorm_kernel", "kernel.py:fused_add_rmsnorm", "residual_out", "(y, r)"):
            assert part in prompt, part
        assert (env.unwrapped.workspace / "kernel.py").read_text() == BASELINE
    finally:
        env.close()
