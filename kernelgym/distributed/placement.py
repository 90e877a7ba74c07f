"""Where actors run: connecting to Ray, and the resources each env's actor asks for.

Each env is one actor asking for a CPU (or, with more envs than the cluster's CPUs, an even share of them, so all
fit at once) and, where the cluster has GPUs, a fraction of one GPU (by default the cluster's GPUs shared evenly by
the envs, at most one each). Ray packs the
actors of a fraction onto one GPU and sets each actor's ``CUDA_VISIBLE_DEVICES`` to the GPU it was given, so an
env only ever sees its own GPU. On a cluster without GPUs (the CPU interpreter) no GPU is asked for.

What actors on one GPU share: the GPU itself. Their timed runs are not yet ordered by one schedule per GPU (the
per-GPU timing lock is a later change); the seam for it is `EnvActor.placement`'s ``gpu_ids``, known in each actor
before its env is made (docs/DISTRIBUTED.md).
"""
from __future__ import annotations

from typing import Any

from kernelgym.errors import KernelGymError

#: Ray rounds fractional resources to this many decimal places; a finer fraction is refused by Ray.
_FRACTION_DIGITS = 4


class RayUnavailableError(KernelGymError):
    """Ray is not installed, or the cluster at the given address cannot be reached."""


def require_ray():
    """The `ray` module.

    Raises:
        RayUnavailableError: ray is not installed (the fix: ``pip install 'kernelgym[ray]'``).
    """
    try:
        import ray
    except ImportError as e:
        raise RayUnavailableError(f"the Ray backend needs ray ({e}); install it with: pip install 'kernelgym[ray]'") \
            from None
    return ray


def connect(address: str | None = None):
    """Join the Ray cluster at `address` (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``), or start a local
    instance when `address` is None; a driver already connected is left as it is. Returns the `ray` module.

    Raises:
        RayUnavailableError: ray is missing, or no cluster answers at `address`.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    try:
        # The dashboard is a web server the envs do not need; a driver that wants it starts Ray itself.
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise RayUnavailableError(f"cannot join the Ray cluster at {address!r}: {e} (start one with `ray start "
                                  f"--head`, or leave --address out for a local instance)") from None
    return ray


def share(num_envs: int, per_env: float | None, cluster_total: float, whole: bool) -> float:
    """The amount of one resource (GPUs or CPUs) one env's actor asks for.

    Args:
        num_envs: envs placed together (>= 1).
        per_env: as asked (None: `cluster_total` shared evenly by the envs, at most 1 each; 0: none).
        cluster_total: the cluster's amount (``ray.cluster_resources()``; 0 where it has none).
        whole: above 1, only whole numbers are allowed (GPUs).

    Returns:
        An amount in [0, 1] (or, as asked, above 1); 0 where the cluster has none and nothing was asked.

    Raises:
        ValueError: `num_envs` below 1, `per_env` negative, or (`whole`) a fraction above 1, which Ray refuses.
    """
    if num_envs < 1:
        raise ValueError(f"num_envs must be at least 1, got {num_envs}")
    if per_env is None:
        if cluster_total <= 0:
            return 0.0
        # Rounded down so that num_envs actors always fit at once; an actor that does not fit would wait forever.
        scale = 10 ** _FRACTION_DIGITS
        return min(1.0, int(cluster_total / num_envs * scale) / scale) or 1.0 / scale
    if per_env < 0 or (whole and per_env > 1 and per_env != int(per_env)):
        raise ValueError(f"a per-env amount must be a fraction in [0, 1]{' or a whole number' if whole else ''}, "
                         f"got {per_env}")
    return float(per_env)


def actor_options(num_envs: int, *, gpus_per_env: float | None = None, cpus_per_env: float | None = None,
                  max_restarts: int = 2, max_task_retries: int = 0) -> dict[str, Any]:
    """The ``.options(...)`` of each env's actor on the connected cluster.

    Args:
        num_envs: envs placed together.
        gpus_per_env: GPUs per actor (None: the cluster's GPUs shared evenly, at most 1 each; none without GPUs).
        cpus_per_env: CPUs per actor (None: 1, or the cluster's CPUs shared evenly where num_envs exceeds them).
        max_restarts: times Ray restarts an actor whose process died (kill -9, OOM, node loss).
        max_task_retries: times Ray re-runs a call that was in flight when its actor died (0: the caller learns
            of the death and decides; the vector env replays the episode itself).

    Returns:
        ``{"num_cpus", "num_gpus", "max_restarts", "max_task_retries"}``.

    Raises:
        ValueError: as `share`.
    """
    ray = require_ray()
    resources = ray.cluster_resources()
    return {"num_cpus": share(num_envs, cpus_per_env, float(resources.get("CPU", 0.0)), whole=False),
            "num_gpus": share(num_envs, gpus_per_env, float(resources.get("GPU", 0.0)), whole=True),
            "max_restarts": max_restarts, "max_task_retries": max_task_retries}
