"""`RayVectorEnv` and `make_ray_vec`: a Gymnasium vector env whose envs are Ray actors, one env per actor.

Like `gymnasium.vector.AsyncVectorEnv`, but the envs may sit on any node and GPU of a Ray cluster:

    envs = make_ray_vec("KernelArena/triton-rmsnorm-v0", num_envs=8, address="auto")
    obs, info = envs.reset(seed=0)          # obs["prompt"]: a tuple of 8 str
    obs, reward, terminated, truncated, info = envs.step([{"kind": "submit"}] * 8)

Autoreset is Gymnasium 1.x's default, next-step: the step after an env's episode ended resets that env (its action
is ignored; reward 0, not terminated, not truncated) and returns the new episode's first observation. Text
observations come back as tuples of str, one per env, as `SyncVectorEnv` and kernelgym's `AsyncVectorEnv` give
them. A dead actor is handled by its `EnvHandle`: the episode is replayed on the restarted actor, or the step is
reported as an infra fault (``info["outcome"] == "infra_fault"``, truncated, reward 0).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from kernelgym.distributed.handle import EnvHandle
from kernelgym.distributed.placement import actor_options, connect


class RayVectorEnv(VectorEnv):
    """`num_envs` kernelgym envs, each in its own Ray actor, stepped together.

    Args:
        env_ids: one registered id per env (all envs must share the observation and action spaces, as every
            KernelArena task does).
        env_kwargs: `KernelArenaEnv` arguments given to every env.
        options: each actor's Ray options (placement.actor_options).
        episode_retries: replays of an episode whose actor died (see `EnvHandle`).

    Attributes:
        handles: one `EnvHandle` per env, in env order.

    Raises:
        ValueError: `env_ids` is empty, or the envs' spaces differ.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, env_ids: Sequence[str], env_kwargs: dict[str, Any], options: dict[str, Any],
                 episode_retries: int = 1):
        import ray

        if not env_ids:
            raise ValueError("RayVectorEnv needs at least one env id")
        self.num_envs = len(env_ids)
        self.handles = [EnvHandle(env_id, env_kwargs, options, episode_retries) for env_id in env_ids]
        spaces = ray.get([h.actor.spaces.remote() for h in self.handles])
        self.single_observation_space, self.single_action_space, env_metadata = spaces[0]
        for env_id, (obs_space, act_space, _) in zip(env_ids, spaces):
            if obs_space != self.single_observation_space or act_space != self.single_action_space:
                raise ValueError(f"{env_id}'s spaces differ from {env_ids[0]}'s; a vector env needs one pair of "
                                 f"spaces for all its envs")
        self.metadata = {**env_metadata, "autoreset_mode": AutoresetMode.NEXT_STEP}
        self.autoreset_mode = AutoresetMode.NEXT_STEP
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._observations = create_empty_array(self.single_observation_space, n=self.num_envs, fn=np.zeros)
        self._autoreset_envs = np.zeros(self.num_envs, dtype=np.bool_)
        self._refs: list | None = None

    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None):
        """Reset every env. `seed`: None, an int (env i gets seed + i) or one seed per env. Returns the batched
        (observations, infos).

        Raises:
            ValueError: a seed list of the wrong length. EnvLostError: an env's actor could not be brought back.
        """
        seeds = [None] * self.num_envs if seed is None else \
            [seed + i for i in range(self.num_envs)] if isinstance(seed, int) else list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"{len(seeds)} seeds for {self.num_envs} envs; give one per env, an int, or None")
        refs = [h.reset(s, options) for h, s in zip(self.handles, seeds)]
        results = [h.result(r) for h, r in zip(self.handles, refs)]
        self._autoreset_envs[:] = False
        infos: dict[str, Any] = {}
        for i, (_, info) in enumerate(results):
            infos = self._add_info(infos, info, i)
        self._observations = concatenate(self.single_observation_space, [o for o, _ in results], self._observations)
        return self._observations, infos

    def step_async(self, actions: Any) -> None:
        """Send one action to each env without waiting. `actions`: a batch of `action_space` (a dict of per-field
        arrays/tuples) or a sequence of `num_envs` single actions (dicts such as ``{"kind": "submit"}``).

        Raises:
            ValueError: a sequence of the wrong length; RuntimeError: a step is already in flight.
        """
        if self._refs is not None:
            raise RuntimeError("step_async called twice without step_wait")
        if isinstance(actions, dict):
            actions = list(iterate(self.action_space, actions))
        if len(actions) != self.num_envs:
            raise ValueError(f"{len(actions)} actions for {self.num_envs} envs; give one per env")
        self._refs = [("reset", h.reset()) if self._autoreset_envs[i] else ("step", h.step(a))
                      for i, (h, a) in enumerate(zip(self.handles, actions))]

    def step_wait(self):
        """The batched (observations, rewards float64, terminations bool, truncations bool, infos) of the step
        sent by `step_async`; an env that was autoreset gives its reset's observation and info, reward 0."""
        if self._refs is None:
            raise RuntimeError("step_wait called without step_async")
        refs, self._refs = self._refs, None
        observations, infos = [], {}
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        for i, (handle, (kind, ref)) in enumerate(zip(self.handles, refs)):
            out = handle.result(ref)
            if kind == "reset":
                obs, info = out
            else:
                obs, rewards[i], terminations[i], truncations[i], info = out
                if terminations[i] or truncations[i]:
                    info = {**info, "outcome": info.get("outcome") or (info.get("grade") or {}).get("outcome")}
            observations.append(obs)
            infos = self._add_info(infos, info, i)
        self._observations = concatenate(self.single_observation_space, observations, self._observations)
        self._autoreset_envs = np.logical_or(terminations, truncations)
        return self._observations, rewards, terminations, truncations, infos

    def step(self, actions: Any):
        """`step_async` then `step_wait`."""
        self.step_async(actions)
        return self.step_wait()

    def placements(self) -> list[dict[str, Any]]:
        """Each env's actor's node, pid and GPU ids (`EnvActor.placement`), in env order."""
        return [h.placement() for h in self.handles]

    def close_extras(self, **kwargs: Any) -> None:
        for handle in self.handles:
            handle.close()


def make_ray_vec(env_id: str | Sequence[str], num_envs: int | None = None, *, address: str | None = None,
                 gpus_per_env: float | None = None, cpus_per_env: float | None = None, max_restarts: int = 2,
                 episode_retries: int = 1, **env_kwargs: Any) -> RayVectorEnv:
    """A `RayVectorEnv` of `num_envs` envs of `env_id`, like ``gym.make_vec(env_id, num_envs)``.

    Args:
        env_id: an env id or task name, or one per env (then `num_envs` defaults to their count).
        num_envs: how many envs (one actor each).
        address: the Ray cluster to join (None: the connected one, or a new local instance).
        gpus_per_env: GPUs per actor (None: the cluster's GPUs shared evenly, none without GPUs; placement.py).
        cpus_per_env: CPUs per actor (None: 1, or an even share where the envs outnumber the CPUs).
        max_restarts: Ray restarts of a dead actor. episode_retries: replays of its episode (`EnvHandle`).
        **env_kwargs: `KernelArenaEnv` arguments; ``run_dir`` defaults to the driver's default run directory,
            made absolute here, so every actor on this host writes where a local env would.

    Returns:
        The vector env, not yet reset.

    Raises:
        RayUnavailableError: ray is missing or the cluster cannot be reached.
        UnknownTaskError: an unknown task name. ValueError: `num_envs` disagrees with the ids given.
    """
    import gymnasium as gym

    import kernelgym
    from kernelgym.env import DEFAULT_RUN_DIR

    ids = [env_id] * (num_envs or 1) if isinstance(env_id, str) else list(env_id)
    if num_envs is not None and len(ids) != num_envs:
        raise ValueError(f"{len(ids)} env ids for num_envs={num_envs}; give one id, or one per env")
    ids = [i if i in gym.registry else kernelgym.get_task(i).env_id for i in ids]
    env_kwargs = {**env_kwargs, "run_dir": str(Path(env_kwargs.get("run_dir") or DEFAULT_RUN_DIR).resolve())}
    connect(address)
    options = actor_options(len(ids), gpus_per_env=gpus_per_env, cpus_per_env=cpus_per_env,
                            max_restarts=max_restarts)
    return RayVectorEnv(ids, env_kwargs, options, episode_retries=episode_retries)
