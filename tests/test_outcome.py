"""Typed outcomes (kernelgym/grader/outcome.py): each grade carries the one outcome its gates decide, and the
rollout the episode's. On the CPU interpreter."""
from pathlib import Path

import pytest

from kernelgym.grader import GraderConfig, outcome
from kernelgym.grader.outcome import OUTCOMES, decide
from kernelgym.rollout import episode_outcome

from tests.test_grader import BASELINE

TIMED = {"noise_band": [0.99, 1.01]}


@pytest.mark.parametrize("kwargs,expected", [
    (dict(compiled=True, correct=True, performance=True, fault="infra"), outcome.INFRA_FAULT),
    (dict(compiled=True, correct=False, performance=None, fault="timeout"), outcome.TIMEOUT),
    (dict(compiled=False, correct=None, performance=None), outcome.COMPILE_ERROR),
    (dict(compiled=True, correct=False, performance=None), outcome.INCORRECT),
    (dict(compiled=True, correct=False, performance=None, checks={"observer": "failed"}), outcome.PROVENANCE_REFUSED),
    (dict(compiled=True, correct=False, performance=None, checks={"static_check": "failed"}),
     outcome.PROVENANCE_REFUSED),
    (dict(compiled=True, correct=False, performance=None, checks={"dynamic_check": "failed"}),
     outcome.PROVENANCE_REFUSED),
    (dict(compiled=True, correct=True, performance=None), outcome.CORRECT_NOT_TIMED),
    (dict(compiled=True, correct=True, performance=False), outcome.SPEEDUP_WITHHELD),
    (dict(compiled=True, correct=True, performance=True, configs=[TIMED]), outcome.NO_GAIN),
    (dict(compiled=True, correct=True, performance=True, configs=[{"noise_band": [1.05, 1.2]}, TIMED]),
     outcome.FASTER),
    (dict(compiled=True, correct=True, performance=True, configs=[{"noise_band": [0.5, 0.6]}, TIMED]),
     outcome.SLOWER),
])
def test_decide_maps_the_gates_to_one_outcome(kwargs, expected):
    got = decide(**{"configs": [], "checks": {}, "fault": None, **kwargs})
    assert got == expected and got in OUTCOMES


def test_graded_outcomes_on_the_interpreter(grade):
    assert grade(BASELINE).outcome == outcome.CORRECT_NOT_TIMED
    assert grade(BASELINE.replace("def rmsnorm(", "def rmsnorm(((", 1)).outcome == outcome.COMPILE_ERROR
    assert grade(BASELINE.replace("y = x * rstd * w", "y = 2.0 * x * rstd * w")).outcome == outcome.INCORRECT
    torch_path = BASELINE + "\n\ndef rmsnorm(x, w, eps=1e-6):\n    import torch\n    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w\n"
    g = grade(torch_path)
    assert g.score == 20.0 and g.outcome == outcome.PROVENANCE_REFUSED, (g.checks, g.stages[1].messages)
    assert g.to_dict()["outcome"] == g.outcome


def test_a_kernel_past_the_limit_is_a_timeout(grade):
    hang = BASELINE.replace("import triton\n", "import triton\nimport time\ntime.sleep(60)\n", 1)
    g = grade(hang, config=GraderConfig(timeout_s=6.0, warm_worker=False))
    assert g.score <= 20.0 and g.outcome == outcome.TIMEOUT, (g.stages[1].messages, g.outcome)


def test_a_sandbox_that_cannot_start_is_an_infra_fault_not_the_kernels(grade, monkeypatch):
    from kernelgym.grader.grader import Grader
    real = Grader._readonly
    # bubblewrap refuses to start on a bind source that does not exist: no harness line is ever printed.
    monkeypatch.setattr(Grader, "_readonly", lambda self: [*real(self), Path("/nonexistent/kernelgym-infra-test")])
    g = grade(BASELINE, config=GraderConfig(warm_worker=False))
    assert g.score == 0.0 and g.outcome == outcome.INFRA_FAULT, (g.stages[0].messages, g.outcome)


@pytest.mark.parametrize("grade_dict,error,expected", [
    ({"outcome": "faster"}, None, "faster"),
    ({"outcome": "faster"}, "policy error: boom", outcome.POLICY_ERROR),
    ({}, None, outcome.INFRA_FAULT),
])
def test_the_episode_outcome(grade_dict, error, expected):
    assert episode_outcome(grade_dict, error) == expected


def test_the_env_grades_once_more_after_an_infra_fault(tmp_path, monkeypatch, require_bwrap):
    import kernelgym  # noqa: F401 - registers the envs
    import gymnasium as gym
    from kernelgym.grader.grader import Grader
    real, calls = Grader._readonly, []

    def fails_first(self):
        calls.append(1)
        return [*real(self), *([Path("/nonexistent/kernelgym-infra-test")] if len(calls) == 1 else [])]

    monkeypatch.setattr(Grader, "_readonly", fails_first)
    env = gym.make("KernelArena/triton-rmsnorm-v0", hardware="cpu-interpreter", run_dir=str(tmp_path),
                   grader=GraderConfig(warm_worker=False), spawn_ahead=False)
    env.reset(seed=3)
    _, reward, terminated, _, info = env.step({"kind": "submit"})
    env.close()
    assert terminated and reward == 120.0 and info["grade"]["outcome"] == outcome.CORRECT_NOT_TIMED
