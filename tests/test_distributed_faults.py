"""kernelgym.distributed's faults on a local Ray instance (CPU): actors dead for good, impossible resource requests,
a closed vector env, malformed inputs.

One Ray instance of 2 CPUs serves the module, and one vector env of 2 envs (half a CPU each, no Ray restarts, so a
kill -9 ends an actor for good) serves the tests that do not need their own.
"""
import os
import signal
import time

import numpy as np
import pytest
import ray
from gymnasium.error import ClosedEnvironmentError

import kernelgym.distributed.handle as handle_module
from kernelgym.distributed import EnvLostError, RayVectorEnv, make_ray_vec
from kernelgym.distributed.placement import ActorStartTimeout

SUBMIT = {"kind": "submit"}
OK = {"kind": "shell", "cmd": "echo ok"}


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def envs(tmp_path_factory):
    envs = make_ray_vec("triton-rmsnorm", 2, run_dir=tmp_path_factory.mktemp("faults"), max_restarts=0,
                        cpus_per_env=0.5)
    yield envs
    envs.close()


def _kill(envs, index: int) -> None:
    """kill -9 env `index`'s actor (no restarts: it is dead for good) and wait until Ray knows."""
    pid = envs.placements()[index]["pid"]
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while not envs.placements()[index]["dead"] and time.monotonic() < deadline:
        time.sleep(0.2)


def _dead_actors(monkeypatch):
    """Every new actor the handles make is ended at once (a cluster that keeps losing them)."""
    real = handle_module.remote_env_actor

    def dead(*args):
        actor = real(*args)
        ray.kill(actor, no_restart=True)
        return actor

    monkeypatch.setattr(handle_module, "remote_env_actor", dead)


@pytest.mark.timeout(300)
def test_actor_dead_for_good_during_autoreset_loses_no_reward(envs, require_bwrap, monkeypatch):
    envs.reset(seed=0)
    _, reward, terminated, *_ = envs.step([SUBMIT, OK])
    assert reward[0] == 120.0 and terminated[0]
    _kill(envs, 0)
    assert envs.placements()[0]["dead"] and envs.placements()[1]["dead"] is False
    # env 0 autoresets on a new actor; env 1's graded reward comes back in the same step.
    obs, reward, terminated, truncated, info = envs.step([OK, SUBMIT])
    assert reward[1] == 120.0 and terminated[1] and info["outcome"][1] == "correct_not_timed"
    assert obs["prompt"][0].startswith("# Task KernelArena/triton-rmsnorm-v0") and not truncated[0]
    obs, *_ = envs.step([OK, OK])
    assert obs["output"][0].startswith("ok") and obs["prompt"][1].startswith("# Task")

    # The new actors die too: the reset raises for env 0 alone, then its autoreset is an infra fault while env 1
    # steps on, and once actors live again env 0 resets on one.
    _kill(envs, 0)
    _dead_actors(monkeypatch)
    with pytest.raises(EnvLostError, match="env 0"):
        envs.reset(seed=1)
    obs, reward, terminated, truncated, info = envs.step([OK, OK])
    assert truncated[0] and reward[0] == 0.0 and info["outcome"][0] == "infra_fault"
    assert obs["output"][1].startswith("ok") and not truncated[1]
    monkeypatch.undo()
    obs, _, _, truncated, _ = envs.step([OK, OK])
    assert obs["prompt"][0].startswith("# Task KernelArena/triton-rmsnorm-v0") and not truncated.any()
    obs, *_ = envs.step([OK, OK])
    assert [o[:2] for o in obs["output"]] == ["ok", "ok"]


@pytest.mark.timeout(120)
def test_malformed_seeds_options_and_actions(envs, require_bwrap):
    obs, _ = envs.reset(seed=np.int64(3))
    assert obs["prompt"][0].startswith("# Task")
    envs.reset(seed=[np.int32(1), None])
    for seed in (1.5, "abc", True, [1.5, 2]):
        with pytest.raises(TypeError, match="seed"):
            envs.reset(seed=seed)
    with pytest.raises(TypeError, match="options must be a dict"):
        envs.reset(seed=0, options="notadict")
    with pytest.raises(ValueError, match="config"):
        envs.step({"kind": np.zeros(2, dtype=np.int64), "cmd": ("echo a",) * 2})
    obs, *_ = envs.step([OK, OK])  # nothing was sent: the envs step on
    assert [o[:2] for o in obs["output"]] == ["ok", "ok"]


@pytest.mark.timeout(60)
def test_impossible_resource_requests_fail_at_once(tmp_path):
    for kwargs, what in (({"num_envs": 2, "gpus_per_env": 0.5}, "0 GPU"), ({"num_envs": 1, "cpus_per_env": 4}, "2 CPU"),
                         ({"num_envs": 3, "cpus_per_env": 1}, "2 CPU")):
        with pytest.raises(ValueError, match=what):
            make_ray_vec("triton-rmsnorm", run_dir=tmp_path, **kwargs)


@pytest.mark.timeout(60)
def test_actors_that_cannot_start_time_out_and_are_ended():
    options = {"num_cpus": 0, "resources": {"no_such_resource": 1}, "max_restarts": 0}
    start = time.monotonic()
    with pytest.raises(ActorStartTimeout, match="no_such_resource") as error:
        RayVectorEnv(["KernelArena/triton-rmsnorm-v0"] * 2, {}, options, start_timeout_s=2)
    assert time.monotonic() - start < 30 and "2 of 2" in str(error.value)
    from ray._private import state  # no dashboard here, so not ray.util.state

    deadline = time.monotonic() + 20
    while any(a["State"] == "PENDING_CREATION" for a in state.actors().values()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [a for a in state.actors().values() if a["State"] == "PENDING_CREATION"]


@pytest.mark.timeout(120)
def test_closed_vector_env_refuses_steps(tmp_path, require_bwrap):
    envs = make_ray_vec("triton-rmsnorm", 1, run_dir=tmp_path, cpus_per_env=0.5)
    envs.reset(seed=0)
    actor = envs.handles[0].actor
    envs.close()
    envs.close()  # a second close does nothing
    for call in (lambda: envs.step([OK]), lambda: envs.reset(seed=0), envs.placements):
        with pytest.raises(ClosedEnvironmentError, match="closed"):
            call()
    assert envs.handles[0].actor is actor  # no new actor was started


def test_actors_that_cannot_start_yet_are_named_in_a_warning_before_the_timeout(monkeypatch):
    # Found by a second breaker: a second vector env on a busy cluster waited the whole start_timeout_s (600 s)
    # silently. After WAIT_WARNING_S a warning says what the actors wait for; the wait goes on to the timeout.
    from types import SimpleNamespace

    from kernelgym.distributed import placement
    waits, killed = [], []

    def wait(refs, num_returns, timeout):
        waits.append(timeout)
        return [], list(refs)
    fake = SimpleNamespace(wait=wait, kill=lambda a, no_restart: killed.append(a),
                           available_resources=lambda: {"CPU": 0.0}, cluster_resources=lambda: {"CPU": 2.0})
    monkeypatch.setattr(placement, "require_ray", lambda: fake)
    monkeypatch.setattr(placement, "WAIT_WARNING_S", 0.5)
    with pytest.warns(RuntimeWarning, match="2 of 2 Ray actor.*have not started after 0.5 s.*'num_cpus': 1"):
        with pytest.raises(placement.ActorStartTimeout, match="after 2 s"):
            placement.started(["a", "b"], ["r1", "r2"], {"num_cpus": 1}, timeout_s=2.0)
    assert waits == [0.5, 1.5] and killed == ["a", "b"]
