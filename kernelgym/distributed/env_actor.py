"""`EnvActor`: one kernelgym env inside one Ray actor process.

The class is plain Python (Ray is imported only by the code that makes actors of it, `remote_env_actor`), so
kernelgym imports without Ray. Ray restarts a dead actor by calling ``__init__`` again with the same arguments:
a restarted actor holds a fresh env, not yet reset.
"""
from __future__ import annotations

import os
import warnings
from typing import Any


class EnvActor:
    """Makes ``gym.make(env_id, **env_kwargs)`` in the actor's process and forwards reset and step to it.

    Args:
        env_id: a registered ``KernelArena/...`` id.
        env_kwargs: `KernelArenaEnv` arguments (run_dir, max_steps, sandbox, ...), sent to the actor as they are.

    Raises:
        As ``gym.make`` raises (UnknownTaskError, SandboxUnavailableError, ...), surfaced by Ray at the first call.
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any]):
        import gymnasium as gym

        import kernelgym  # noqa: F401 - registers the KernelArena/* ids in this process

        # The GPUs Ray gave this actor; CUDA_VISIBLE_DEVICES already names them, so the env sees only its own.
        # A per-GPU timing schedule (one lock per GPU id, host-wide) would be taken here, before the env exists.
        self._placement = self._where()
        self.env = gym.make(env_id, **env_kwargs)

    @staticmethod
    def _where() -> dict[str, Any]:
        import ray

        context = ray.get_runtime_context()
        with warnings.catch_warnings():  # Ray's own property reads a deprecated one of its own
            warnings.simplefilter("ignore", DeprecationWarning)
            restarted = context.was_current_actor_reconstructed
        return {"node_id": context.get_node_id(), "pid": os.getpid(),
                "gpu_ids": [str(g) for g in context.get_accelerator_ids().get("GPU", [])],
                "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "restarted": restarted}

    def placement(self) -> dict[str, Any]:
        """``{"node_id", "pid", "gpu_ids", "cuda_visible_devices", "restarted"}`` of this actor's process."""
        return dict(self._placement)

    def spaces(self):
        """(observation_space, action_space, metadata) of the env."""
        return self.env.observation_space, self.env.action_space, dict(self.env.metadata)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        """``env.reset(seed=seed, options=options)``: (observation, info)."""
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any):
        """``env.step(action)``: (observation, reward, terminated, truncated, info)."""
        return self.env.step(action)

    def replay(self, seed: int | None, options: dict[str, Any] | None, actions: list[Any]):
        """Reset with `seed` and `options`, then step `actions` in order; returns the last step's result (the
        reset's (observation, info) when `actions` is empty). One call, so a replay is not interleaved."""
        result = self.env.reset(seed=seed, options=options)
        for action in actions:
            result = self.env.step(action)
        return result

    def close(self) -> None:
        """Close the env (its grader worker, sandbox and next episode made ahead)."""
        self.env.close()


def remote_env_actor(env_id: str, env_kwargs: dict[str, Any], options: dict[str, Any]):
    """A new `EnvActor` on the connected cluster with Ray ``options`` (placement.actor_options); returns its
    handle. The actor starts in the background: its first call waits for it."""
    import ray

    return ray.remote(EnvActor).options(**options).remote(env_id, env_kwargs)
