"""kernelgym.distributed on a local Ray instance (CPU, Triton's interpreter: a correct kernel scores 120).

One Ray instance serves the module (``num_cpus=4``: four actors fit whatever the machine's core count; each
actor's share of the CPUs is a Ray bookkeeping figure, the kernels of a 2-core CI machine still share 2 cores).
"""
import json
import os
import signal
import time

import numpy as np
import pytest
import ray  # not a skip when missing: .ci/setup installs the ray extra, and these claims must be shown

from kernelgym import cli
from kernelgym.distributed import RemoteEnv, make_ray_vec
from kernelgym.distributed.placement import share
from kernelgym.integrations._common import make_env
from kernelgym.integrations.trl import KernelArenaTRLEnv

TASKS = ("triton-rmsnorm", "triton-softmax")  # the cheapest to grade on the interpreter
SUBMIT = {"kind": "submit"}


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _shell(cmd: str, n: int) -> dict:
    """A batched shell action for `n` envs (every field of the Dict action space, batched)."""
    return {"kind": np.zeros(n, dtype=np.int64), "cmd": (cmd,) * n, "path": ("",) * n, "content": ("",) * n,
            "old": ("",) * n, "new": ("",) * n, "config": np.zeros(n, dtype=np.int64)}


def _kill_mid_step(envs, index: int, action, others) -> tuple:
    """Send `action` to env `index` (and `others` to the rest), kill -9 that env's actor while it runs; the step."""
    pid = envs.placements()[index]["pid"]
    envs.step_async([action if i == index else others for i in range(envs.num_envs)])
    time.sleep(1.5)  # the action sleeps 3 s: the actor dies in the middle of it
    os.kill(pid, signal.SIGKILL)
    return envs.step_wait()


def test_share_of_a_resource():
    assert share(8, None, 1.0, whole=True) == 0.125  # 8 actors on one GPU
    assert share(3, None, 2.0, whole=True) == 0.6666  # rounded down: 3 x 0.6666 fit on 2 GPUs
    assert share(2, None, 8.0, whole=True) == 1.0  # at most a whole GPU each
    assert share(4, None, 0.0, whole=True) == 0.0  # the CPU interpreter: no GPU asked for
    assert share(4, None, 2.0, whole=False) == 0.5 and share(2, None, 16.0, whole=False) == 1.0
    with pytest.raises(ValueError, match="fraction in"):
        share(1, 1.5, 2.0, whole=True)
    with pytest.raises(ValueError, match="num_envs"):
        share(0, None, 1.0, whole=True)


@pytest.mark.timeout(400)
def test_four_actors_two_tasks_run_to_graded_ends(tmp_path, require_bwrap):
    ids = [TASKS[i % 2] for i in range(4)]
    envs = make_ray_vec(ids, run_dir=tmp_path)
    try:
        obs, _ = envs.reset(seed=0)
        assert isinstance(obs["prompt"], tuple) and len(obs["prompt"]) == 4
        for prompt, task in zip(obs["prompt"], ids):
            assert prompt.startswith(f"# Task KernelArena/{task}-v0"), prompt[:80]
            assert "\t\t\t\t" not in prompt
        where = envs.placements()
        assert len({w["pid"] for w in where}) == 4 and all(w["gpu_ids"] == [] for w in where)
        obs, reward, terminated, truncated, _ = envs.step(_shell("echo hello", 4))  # a batched Dict action
        assert all("hello" in o for o in obs["output"]) and list(reward) == [0.0] * 4 and not terminated.any()
        obs, reward, terminated, truncated, info = envs.step([SUBMIT] * 4)  # a list of single actions
        assert list(reward) == [120.0] * 4 and terminated.all() and not truncated.any()
        assert list(info["outcome"]) == ["correct_not_timed"] * 4
        assert list(info["grade"]["score"]) == [120.0] * 4
        # Next-step autoreset: the action is ignored, each env starts its next episode.
        obs, reward, terminated, truncated, _ = envs.step([SUBMIT] * 4)
        assert list(reward) == [0.0] * 4 and not (terminated.any() or truncated.any())
        assert all(p.startswith("# Task KernelArena/") for p in obs["prompt"])
    finally:
        envs.close()


@pytest.mark.timeout(300)
def test_killed_actor_has_its_episode_replayed(tmp_path, require_bwrap):
    envs = make_ray_vec("triton-rmsnorm", 2, run_dir=tmp_path)
    try:
        envs.reset(seed=0)
        envs.step([{"kind": "write_file", "path": "mark.txt", "content": "before the kill"}, SUBMIT])
        first_pid = envs.placements()[0]["pid"]
        obs, reward, terminated, truncated, info = _kill_mid_step(
            envs, 0, {"kind": "shell", "cmd": "cat mark.txt; sleep 3; echo slept"}, SUBMIT)
        # The restarted actor re-ran the episode: the file written before the kill is there again.
        assert "before the kill" in obs["output"][0] and "slept" in obs["output"][0], obs["output"][0]
        assert list(info["replays"]) == [1, 0] and not (terminated[0] or truncated[0])
        placement = envs.placements()[0]
        assert placement["restarted"] and placement["pid"] != first_pid
        obs, reward, terminated, *_ = envs.step([SUBMIT, SUBMIT])
        assert reward[0] == 120.0 and terminated[0]
    finally:
        envs.close()


@pytest.mark.timeout(300)
def test_killed_actor_without_replays_is_an_infra_fault(tmp_path, require_bwrap):
    envs = make_ray_vec("triton-rmsnorm", 1, run_dir=tmp_path, episode_retries=0)
    try:
        envs.reset(seed=0)
        obs, reward, terminated, truncated, info = _kill_mid_step(envs, 0, {"kind": "shell", "cmd": "sleep 3"}, None)
        assert reward[0] == 0.0 and truncated[0] and not terminated[0]
        assert info["outcome"][0] == "infra_fault" and "died" in info["infra_error"][0]
        obs, *_ = envs.step([SUBMIT])  # autoreset on a new actor
        assert obs["prompt"][0].startswith("# Task KernelArena/triton-rmsnorm-v0")
    finally:
        envs.close()


@pytest.mark.timeout(300)
def test_adapters_get_their_env_from_ray(tmp_path, require_bwrap):
    env = make_env("triton-rmsnorm", ray_address="auto", run_dir=tmp_path)
    try:
        assert isinstance(env, RemoteEnv)
        obs, _ = env.reset(seed=0)
        assert obs["prompt"].startswith("# Task KernelArena/triton-rmsnorm-v0")
    finally:
        env.close()
    trl_env = KernelArenaTRLEnv(ray_address="auto", run_dir=tmp_path)
    trl_env.reset(task="triton-softmax", seed=0)
    assert isinstance(trl_env.env, RemoteEnv)
    trl_env.submit()
    assert trl_env.get_reward() == 120.0
    trl_env.close()


def _run(*args) -> int:
    return cli.main(["run", "--task", TASKS[0], "--task", TASKS[1], "--policy", "scripted",
                     "--policy-config", '{"actions": []}', *map(str, args)])


def _runs(root) -> dict:
    """task -> (its run directory, its results) under `root`."""
    out = {}
    for run_dir in sorted(root.iterdir()):
        out[json.loads((run_dir / "run.json").read_text())["task"]] = (run_dir, json.loads(
            (run_dir / "results.json").read_text()))
    return out


def _verdicts(results) -> list:
    return [(r["reward"], r["outcome"], [(json.dumps(c["config"]), c["correct"]) for c in r["grade"]["configs"]])
            for r in results]


@pytest.mark.timeout(500)
def test_ray_backend_matches_local_and_resumes(tmp_path, require_bwrap, capsys, monkeypatch):
    assert _run("--backend", "ray", "--num-envs", 2, "--run-dir", tmp_path / "ray") == 0
    out = capsys.readouterr().out.replace("\n", "")
    # The local backend's opening line and closing note, both.
    assert "with policy scripted on Triton CPU interpreter (TRITON_INTERPRET=1)" in out, out
    assert "CPU interpreter: correctness only" in out
    assert _run("--run-dir", tmp_path / "local") == 0
    on_ray, local = _runs(tmp_path / "ray"), _runs(tmp_path / "local")
    assert set(on_ray) == set(local) == set(TASKS)
    for task in TASKS:
        assert _verdicts(on_ray[task][1]) == _verdicts(local[task][1])
        assert [r["seed"] for r in on_ray[task][1]] == [r["seed"] for r in local[task][1]] == [0]
        assert [r["reward"] for r in on_ray[task][1]] == [120.0]
        ray_dir, local_dir = on_ray[task][0], local[task][0]
        settings = [json.loads((d / "run.json").read_text()) for d in (ray_dir, local_dir)]
        assert settings[0] == settings[1]  # so either backend can --resume the other's run
        events = [[json.loads(line)["event"] for line in (d / "trajectories.jsonl").read_text().splitlines()]
                  for d in (ray_dir, local_dir)]
        assert events[0] == events[1] == ["reset", "step"]
    # Resumed with one more episode: the first is kept, the second (seed 1) runs on Ray.
    ray_dir = on_ray[TASKS[0]][0]
    assert cli.main(["run", "--backend", "ray", "--resume", str(ray_dir), "--episodes", "2"]) == 0
    results = json.loads((ray_dir / "results.json").read_text())
    assert len(results) == 2 and results[0] == on_ray[TASKS[0]][1][0] and results[1]["reward"] == 120.0
    assert results[1]["seed"] == 1
    assert len((ray_dir / "trajectories.jsonl").read_text().splitlines()) == 4
    # Resumed once finished: said as the local backend says it, and Ray is not started for nothing.
    capsys.readouterr()

    def no_ray(address):
        raise AssertionError("Ray started with no episode left to run")

    monkeypatch.setattr("kernelgym.distributed.backend.connect", no_ray)
    assert cli.main(["run", "--backend", "ray", "--resume", str(ray_dir)]) == 0
    out = capsys.readouterr().out.replace("\n", "")
    assert "resuming: 2 of 2 episodes finished before; none is left to run" in out and "Ray:" not in out, out
    assert json.loads((ray_dir / "results.json").read_text()) == results


HANGING_POLICY = """from dataclasses import dataclass
import pathlib, time


@dataclass
class HangConfig:
    pass


class HangPolicy:
    def __init__(self, config):
        pass

    def reset(self, observation, info):
        pass

    def act(self, observation, info):
        pathlib.Path({marker!r}).write_text("acting")
        time.sleep(600)
        return {{"kind": "submit"}}
"""


@pytest.mark.timeout(300)
def test_sigterm_stops_a_ray_run_cleanly(tmp_path, require_bwrap):
    """`kill -TERM` on `kernelgym run --backend ray` mid-episode: no Ray abort (exit 134), but the local backend's
    stop: a line saying how to resume, exit 143 (128 + SIGTERM), no results.json row for the unfinished episode."""
    import subprocess
    import sys

    marker = tmp_path / "acting"
    (tmp_path / "policies" / "hang").mkdir(parents=True)
    (tmp_path / "policies" / "hang" / "policy.py").write_text(HANGING_POLICY.format(marker=str(marker)))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # its own local instance, not the module's
    proc = subprocess.Popen([sys.executable, "-m", "kernelgym.cli", "run", "--backend", "ray", "--num-envs", "1",
                             "--episodes", "2", "--task", TASKS[1], "--policy", "hang", "--policies-dir",
                             str(tmp_path / "policies"), "--run-dir", str(tmp_path / "runs")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 200
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert marker.exists(), proc.communicate(timeout=60)[0] if proc.poll() is not None else "no episode began"
        os.kill(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert proc.returncode == 143, out
    assert "SIGTERM received" not in out and "Aborted" not in out, out
    assert f"resume with `kernelgym run --backend ray --resume {run_dir}`" in out.replace("\n", ""), out
    assert not (run_dir / "results.json").exists()


def test_an_episode_worker_removes_its_trajectory_folders_when_closed(tmp_path):
    # Each run's trajectory lines go back to the driver with every result: the worker's own copy, in a temp folder,
    # must not outlive it (earlier runs left kernelgym-ray-* folders behind in /tmp).
    from kernelgym.distributed.episode_worker import EpisodeWorker

    class Env:
        closed = False

        def close(self):
            Env.closed = True

    folder = tmp_path / "kernelgym-ray-test"
    folder.mkdir()
    (folder / "trajectories.jsonl").write_text("{}\n")
    worker = EpisodeWorker()
    worker._runs["run"] = (Env(), None, folder / "trajectories.jsonl")
    worker.close()
    assert Env.closed and not folder.exists() and worker._runs == {}
