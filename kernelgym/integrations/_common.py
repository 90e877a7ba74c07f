"""What the trainer adapters share: making the env from a dataset row's task, and the grade as metrics."""
from __future__ import annotations

import os
from typing import Any

import gymnasium as gym


#: Set to a Ray address (``auto``, ``ray://HOST:10001``) to make every adapter's env an actor on that cluster.
RAY_ADDRESS_ENV = "KERNELGYM_RAY_ADDRESS"


def make_env(task: str, ray_address: str | None = None, **env_kwargs: Any) -> gym.Env:
    """The env of `task` through ``gym.make``, or in a Ray actor when a Ray address is given.

    Args:
        task: an env id (``KernelArena/triton-rmsnorm-v0``) or a task name (``triton-rmsnorm``).
        ray_address: a Ray cluster's address (default ``$KERNELGYM_RAY_ADDRESS``): the env is then a
            `kernelgym.distributed.RemoteEnv`, one actor placed on the cluster's nodes and GPUs (docs/DISTRIBUTED.md).
            Every adapter passes its extra keyword arguments here, so ``KernelArenaTRLEnv(ray_address="auto")`` works.
        **env_kwargs: `KernelArenaEnv` arguments (run_dir, max_steps, max_wall_s, sandbox, ...).

    Returns:
        The env, not yet reset.

    Raises:
        UnknownTaskError: no task of that name or id (the message offers close matches).
        RayUnavailableError: a Ray address is given, but ray is missing or the cluster cannot be reached.
        TaskSpecError, SandboxUnavailableError: as `KernelArenaEnv` raises them.
    """
    import kernelgym  # registers the KernelArena/* ids

    env_id = task if task in gym.registry else kernelgym.get_task(task).env_id
    ray_address = ray_address or os.environ.get(RAY_ADDRESS_ENV) or None
    if ray_address:
        from kernelgym.distributed import make_remote_env
        return make_remote_env(env_id, address=ray_address, **{"spawn_ahead": False, **env_kwargs})
    # Each adapter makes one env per episode and closes it: no next episode's processes to start ahead.
    return gym.make(env_id, **{"spawn_ahead": False, **env_kwargs})


def grade_metrics(grade: dict[str, Any] | None) -> dict[str, Any]:
    """The parts of a grade (``info["grade"]``) a trainer logs: score, compiled, correct, speedup and checks.

    Args:
        grade: the grade dict, or None / {} before the episode was graded.

    Returns:
        ``{"score", "compiled", "correct", "speedup", "checks"}``; an empty dict when there is no grade.
    """
    if not grade:
        return {}
    return {"score": float(grade.get("score", 0.0)), "compiled": bool(grade.get("compiled")),
            "correct": bool(grade.get("correct")), "speedup": grade.get("speedup"),
            "checks": grade.get("checks")}
