"""Attack: the agent's first command loads the GPU (a burner kernel, a benchmark loop) right after reset, while the
grader observes the pristine baseline in the background (`Grader.start_worker`). Under time-slicing the baseline's
kernels are preempted for the agent's context, so their observed device times grow; that observation is cached for
the process (every later episode of the task), and a larger observed baseline time widens every speedup
cross-check: a forged speedup passes where it should be withheld.

Defence: `baseline_observed_alone` (the env runs none of the agent's commands, `shell`, `profile` or `bench`,
before `Grader.wait_for_baseline` says the baseline's observation is done). Honest twin: file actions (read, write,
edit) run no code and do not wait.
"""
import threading
import time

import pytest

from kernelgym.env import KernelArenaEnv
from kernelgym.grader import GraderConfig


class _Ran:
    def describe(self):
        return "ran"


@pytest.fixture
def env(tmp_path):
    e = KernelArenaEnv("triton-rmsnorm", run_dir=tmp_path, hardware="cpu-interpreter", sandbox="none",
                     grader=GraderConfig(sandbox="none", warm_worker=False))
    e.reset(seed=0)
    yield e
    e.close()


def _observing_in_background(env, seconds):
    """The state `start_worker` leaves on a GPU: the baseline's observation running in a background thread."""
    done = {}
    env.grader._observer_thread = threading.Thread(
        target=lambda: (time.sleep(seconds), done.setdefault("at", time.monotonic())), daemon=True)
    env.grader._observer_thread.start()
    return done


@pytest.mark.parametrize("action", [{"kind": "shell", "cmd": "python burn_gpu.py"}, {"kind": "bench"},
                                    {"kind": "profile", "config": 0}])
def test_no_command_of_the_agent_runs_while_the_baseline_is_observed(env, monkeypatch, action):
    ran = {}
    monkeypatch.setattr(env.sandbox, "run", lambda *a, **k: (ran.setdefault("at", time.monotonic()), _Ran())[1])
    done = _observing_in_background(env, 0.5)
    env.step(action)
    assert ran and done, "the command did not run, or ran before the baseline's observation ended"
    assert ran["at"] >= done["at"]


def test_file_actions_do_not_wait(env):
    _observing_in_background(env, 3.0)
    start = time.monotonic()
    obs, *_ = env.step({"kind": "read_file", "path": "kernel.py"})
    assert "def " in obs["output"] and time.monotonic() - start < 2.0
