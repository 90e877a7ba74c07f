"""Where actors run: connecting to Ray, and the resources each env's actor asks for.

Each env is one actor asking for a CPU (or, with more envs than the cluster's CPUs, an even share of them, so all
fit at once) and, where the cluster has GPUs, a fraction of one GPU (by default the cluster's GPUs shared evenly by
the envs, at most one each). Ray packs the
actors of a fraction onto one GPU and sets each actor's ``CUDA_VISIBLE_DEVICES`` to the GPU it was given, so an
env only ever sees its own GPU. On a cluster without GPUs (the CPU interpreter) no GPU is asked for.

What actors on one GPU share: the GPU itself. With ``GraderConfig(gpu_schedule=True)`` (passed as `make_ray_vec`'s
``grader``) their timed runs take turns, as every grading on the host does: one lock file per GPU, named by its
UUID (kernelgym/grader/gpu_schedule.py); off by default, as for local envs (docs/DISTRIBUTED.md).
"""
from __future__ import annotations

import warnings
from typing import Any

from kernelgym.errors import KernelGymError

#: How long the actors may take to start (their envs made) before the wait ends with ActorStartTimeout; an actor
#: whose resources no node has waits in Ray's queue forever otherwise.
START_TIMEOUT_S = 600.0
#: After this many seconds of actors not starting, a warning says what they wait for (the wait goes on).
WAIT_WARNING_S = 30.0

#: Ray rounds fractional resources to this many decimal places; a finer fraction is refused by Ray.
_FRACTION_DIGITS = 4


class RayUnavailableError(KernelGymError):
    """Ray is not installed, or the cluster at the given address cannot be reached."""


class ActorStartTimeout(KernelGymError, TimeoutError):
    """Actors did not start in time: no node has the resources they ask for free (or their envs were slow to
    make); the pending actors are ended."""


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
        ValueError: as `share`; or an explicit `gpus_per_env`/`cpus_per_env` whose `num_envs` actors need more
            than the cluster's total (``ray.cluster_resources()``), so they could never all start.
    """
    ray = require_ray()
    resources = ray.cluster_resources()
    options = {}
    asks = (("num_cpus", "CPU", cpus_per_env, False), ("num_gpus", "GPU", gpus_per_env, True))
    for key, name, per_env, whole in asks:
        total = float(resources.get(name, 0.0))
        options[key] = amount = share(num_envs, per_env, total, whole=whole)
        # Ray queues an actor it cannot place and never says so: an impossible request would hang, not fail.
        if per_env is not None and amount * num_envs > total + 1e-9:
            raise ValueError(f"{num_envs} env(s) x {key[4:]}_per_env={per_env} ask for {amount * num_envs:g} {name}, "
                             f"but the Ray cluster has {total:g} {name} in all; ask for at most "
                             f"{total / num_envs:g} per env (or leave it None to share what there is)")
    return {**options, "max_restarts": max_restarts, "max_task_retries": max_task_retries}


def started(actors: list, refs: list, options: dict[str, Any], timeout_s: float = START_TIMEOUT_S) -> list:
    """``ray.get(refs)``, the first calls of newly made `actors`, waiting at most `timeout_s` for all of them.

    Args:
        actors: the actor handles (ended if the wait times out). refs: one first call's ObjectRef per actor.
        options: the actors' Ray options (named in the error). timeout_s: seconds.

    Returns:
        The calls' results, in order.

    Raises:
        ActorStartTimeout: some actors had not answered after `timeout_s`; the message gives how many, what each
            asks for, and the cluster's total and free resources. Every actor in `actors` is ended first.
        As the calls raise.
    """
    ray = require_ray()
    asked = {k: v for k, v in options.items() if k in ("num_cpus", "num_gpus", "resources") and v}
    # A first slice, then a warning: an actor whose resources are all taken (another vector env on the same cluster)
    # waits in Ray's queue silently, up to the whole timeout.
    first = min(timeout_s, WAIT_WARNING_S)
    _, pending = ray.wait(refs, num_returns=len(refs), timeout=first)
    if pending and timeout_s > first:
        warnings.warn(f"{len(pending)} of {len(refs)} Ray actor(s) have not started after {first:g} s, each asking "
                      f"for {asked or 'nothing'}; the cluster has {ray.available_resources()} free. Waiting up to "
                      f"{timeout_s:g} s in all (start_timeout_s)", RuntimeWarning, stacklevel=3)
        _, pending = ray.wait(refs, num_returns=len(refs), timeout=timeout_s - first)
    if pending:
        for actor in actors:
            ray.kill(actor, no_restart=True)
        raise ActorStartTimeout(
            f"{len(pending)} of {len(refs)} Ray actor(s) had not started after {timeout_s:g} s, each asking for "
            f"{asked or 'nothing'}; the cluster has {ray.cluster_resources()} in all, {ray.available_resources()} "
            f"free. No node can hold them (or their envs are slow to make); the actors were ended. Ask for less "
            f"(gpus_per_env, cpus_per_env), add nodes, or raise start_timeout_s")
    return ray.get(refs)
