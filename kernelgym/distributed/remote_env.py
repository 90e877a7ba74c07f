"""`RemoteEnv`: one kernelgym env in a Ray actor, behind the plain `gym.Env` API.

The trainer adapters (kernelgym.integrations) make one env per episode through ``_common.make_env``; given a Ray
address (``ray_address=`` or ``$KERNELGYM_RAY_ADDRESS``) that env is a `RemoteEnv`, so a trainer asking for N
envs gets N actors placed on the cluster's nodes and GPUs. A dead actor is handled as in the vector env
(`EnvHandle`): the episode is replayed, or its step ends truncated with ``info["outcome"] == "infra_fault"``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym

from kernelgym.distributed.handle import EnvHandle
from kernelgym.distributed.placement import START_TIMEOUT_S, actor_options, connect, started


class RemoteEnv(gym.Env):
    """Forwards reset and step to an `EnvActor` through an `EnvHandle`.

    Args:
        handle: the env's handle (`make_remote_env` makes it).
        start_timeout_s: how long its actor may take to start (placement.started; ActorStartTimeout after it).

    Attributes:
        handle: the `EnvHandle` (its ``actor``, ``replays`` and ``placement()``).
    """

    def __init__(self, handle: EnvHandle, start_timeout_s: float = START_TIMEOUT_S):
        self.handle = handle
        (self.observation_space, self.action_space, metadata), = started(
            [handle.actor], [handle.actor.spaces.remote()], handle._options, start_timeout_s)
        self.metadata = dict(metadata)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """As `KernelArenaEnv.reset`, in the actor. Raises ClosedEnvironmentError after `close`."""
        return self.handle.result(self.handle.reset(seed, options))

    def step(self, action: Any):
        """As `KernelArenaEnv.step`, in the actor. Raises ClosedEnvironmentError after `close`."""
        return self.handle.result(self.handle.step(action))

    def close(self) -> None:
        """Close the env and end its actor."""
        self.handle.close()


def make_remote_env(env_id: str, *, address: str | None = None, gpus_per_env: float | None = None,
                    cpus_per_env: float | None = None, max_restarts: int = 2, episode_retries: int = 1,
                    start_timeout_s: float = START_TIMEOUT_S, **env_kwargs: Any) -> RemoteEnv:
    """A `RemoteEnv` of the registered `env_id` on the Ray cluster at `address` (None: the connected one, or a new
    local instance). `gpus_per_env` None asks for a whole GPU where the cluster has GPUs, else none; the other
    arguments are as `make_ray_vec`'s.

    Raises:
        RayUnavailableError: ray is missing or the cluster cannot be reached. ValueError: an explicit
        `gpus_per_env`/`cpus_per_env` above the cluster's total. ActorStartTimeout: the actor did not start in time.
    """
    from kernelgym.env import DEFAULT_RUN_DIR

    env_kwargs = {**env_kwargs, "run_dir": str(Path(env_kwargs.get("run_dir") or DEFAULT_RUN_DIR).resolve())}
    connect(address)
    options = actor_options(1, gpus_per_env=gpus_per_env, cpus_per_env=cpus_per_env, max_restarts=max_restarts)
    return RemoteEnv(EnvHandle(env_id, env_kwargs, options, episode_retries), start_timeout_s=start_timeout_s)
