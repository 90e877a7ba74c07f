"""Vector envs from the plain ``gym.make_vec`` call keep Text observations intact.

Regression: gymnasium 1.4's `AsyncVectorEnv` (shared_memory=True by default) decoded Text observations from shared
memory once, when it was made, so every reset and step returned the padding: 100000 tab characters per field.
"""
import re

import gymnasium as gym
import numpy as np
import pytest

import kernelgym  # noqa: F401 - registers the tasks

ENV_ID = "KernelArena/triton-rmsnorm-v0"
N = 2


def _shell(cmd: str, n: int) -> dict:
    """A batched shell action for `n` envs (every field of the Dict action space, batched)."""
    return {"kind": np.zeros(n, dtype=np.int64), "cmd": (cmd,) * n, "path": ("",) * n, "content": ("",) * n,
            "old": ("",) * n, "new": ("",) * n, "config": np.zeros(n, dtype=np.int64)}


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_make_vec_keeps_text_observations(mode, tmp_path, monkeypatch, require_bwrap):
    monkeypatch.chdir(tmp_path)  # the envs' default run directory (./kernelgym-runs) lands here
    envs = gym.make_vec(ENV_ID, num_envs=N, vectorization_mode=mode)
    try:
        obs, _ = envs.reset(seed=0)
        assert len(obs["prompt"]) == N
        for prompt in obs["prompt"]:
            assert isinstance(prompt, str) and prompt.strip(), "empty prompt"
            assert "\t\t\t\t" not in prompt, "prompt holds runs of tabs (shared-memory padding)"
            assert prompt.startswith("# Task KernelArena/triton-rmsnorm-v0")
        obs, reward, terminated, truncated, info = envs.step(_shell("echo hello", N))
        assert [("hello" in o) for o in obs["output"]] == [True] * N, obs["output"]
        assert not re.search(r"\t{4}", "".join(obs["output"]))
        assert list(reward) == [0.0] * N and not terminated.any() and not truncated.any()
    finally:
        envs.close()


def test_async_without_copy_reads_each_step(tmp_path, monkeypatch, require_bwrap):
    # copy=False hands out the live view of the shared block: it must show the latest step, not the first.
    monkeypatch.chdir(tmp_path)
    envs = gym.make_vec(ENV_ID, num_envs=N, vectorization_mode="async", vector_kwargs={"copy": False})
    try:
        envs.reset(seed=0)
        obs, *_ = envs.step(_shell("echo first", N))
        assert "first" in obs["output"][0]
        obs, *_ = envs.step(_shell("echo second", N))
        assert "second" in obs["output"][1] and "first" not in obs["output"][1]
    finally:
        envs.close()
