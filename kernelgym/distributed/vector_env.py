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

import numbers
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.error import ClosedEnvironmentError
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from kernelgym.distributed.handle import EnvHandle, EnvLostError, infra_fault_step
from kernelgym.distributed.placement import START_TIMEOUT_S, actor_options, connect, started


def _seeds(seed: Any, num_envs: int) -> list[int | None]:
    """One seed per env from `seed` (None, an int or numpy integer: env i gets seed + i, or one per env).

    Raises:
        TypeError: a seed that is not None or an integer (bools and floats included). ValueError: a wrong count.
    """
    def one(s: Any) -> int | None:
        if s is None:
            return None
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise TypeError(f"a seed must be None or an integer, got {type(s).__name__} {s!r}")
        return int(s)

    if seed is None or isinstance(seed, numbers.Integral):
        first = one(seed)
        return [None] * num_envs if first is None else [first + i for i in range(num_envs)]
    if isinstance(seed, (str, bytes)) or not isinstance(seed, (Sequence, np.ndarray)):
        raise TypeError(f"seed must be None, an integer or one seed per env, got {type(seed).__name__} {seed!r}")
    seeds = [one(s) for s in seed]
    if len(seeds) != num_envs:
        raise ValueError(f"{len(seeds)} seeds for {num_envs} envs; give one per env, an int, or None")
    return seeds


class RayVectorEnv(VectorEnv):
    """`num_envs` kernelgym envs, each in its own Ray actor, stepped together.

    Args:
        env_ids: one registered id per env (all envs must share the observation and action spaces, as every
            KernelArena task does).
        env_kwargs: `KernelArenaEnv` arguments given to every env.
        options: each actor's Ray options (placement.actor_options).
        episode_retries: replays of an episode whose actor died (see `EnvHandle`).
        start_timeout_s: how long the actors may take to start (placement.started).

    Attributes:
        handles: one `EnvHandle` per env, in env order.

    Raises:
        ValueError: `env_ids` is empty, or the envs' spaces differ.
        ActorStartTimeout: the actors did not all start within `start_timeout_s` (they are ended).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, env_ids: Sequence[str], env_kwargs: dict[str, Any], options: dict[str, Any],
                 episode_retries: int = 1, start_timeout_s: float = START_TIMEOUT_S):
        if not env_ids:
            raise ValueError("RayVectorEnv needs at least one env id")
        self.num_envs = len(env_ids)
        self.handles = [EnvHandle(env_id, env_kwargs, options, episode_retries) for env_id in env_ids]
        spaces = started([h.actor for h in self.handles], [h.actor.spaces.remote() for h in self.handles],
                         options, start_timeout_s)
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
            ValueError: a seed list of the wrong length. TypeError: a seed that is not an integer, options that is
            not a dict. ClosedEnvironmentError: after `close`. EnvLostError: an env's reset failed on a new actor
            too (the other envs are reset; the lost ones reset on new actors at their next step).
        """
        self._check_open()
        seeds = _seeds(seed, self.num_envs)
        if options is not None and not isinstance(options, Mapping):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__} {options!r}")
        refs = [h.reset(s, options) for h, s in zip(self.handles, seeds)]
        results, lost = [], []
        for i, (h, r) in enumerate(zip(self.handles, refs)):
            try:
                results.append(h.result(r))
            except EnvLostError as e:  # every other env's reset is still collected; a new actor awaits this one
                results.append(None)
                lost.append((i, e))
        self._autoreset_envs[:] = False
        if lost:
            # The lost envs reset at their next step, on their new actors.
            self._autoreset_envs[[i for i, _ in lost]] = True
            raise EnvLostError(f"{len(lost)} of {self.num_envs} env(s) could not be reset: "
                               + "; ".join(f"env {i}: {e}" for i, e in lost)) from lost[0][1]
        infos: dict[str, Any] = {}
        for i, (_, info) in enumerate(results):
            infos = self._add_info(infos, info, i)
        self._observations = concatenate(self.single_observation_space, [o for o, _ in results], self._observations)
        return self._observations, infos

    def step_async(self, actions: Any) -> None:
        """Send one action to each env without waiting. `actions`: a batch of `action_space` (a dict of per-field
        arrays/tuples) or a sequence of `num_envs` single actions (dicts such as ``{"kind": "submit"}``).

        Raises:
            ValueError: a sequence of the wrong length, or a batched dict lacking fields of the action space;
            RuntimeError: a step is already in flight; ClosedEnvironmentError: after `close`.
        """
        self._check_open()
        if self._refs is not None:
            raise RuntimeError("step_async called twice without step_wait")
        if isinstance(actions, Mapping):
            missing = [k for k in self.single_action_space.keys() if k not in actions]
            if missing:
                raise ValueError(f"the batched action lacks the field(s) {missing}; a batched action has every "
                                 f"field of action_space ({list(self.single_action_space.keys())}), or give a "
                                 f"list of {self.num_envs} single actions")
            actions = list(iterate(self.action_space, actions))
        if len(actions) != self.num_envs:
            raise ValueError(f"{len(actions)} actions for {self.num_envs} envs; give one per env")
        self._refs = [("reset", h.reset()) if self._autoreset_envs[i] else ("step", h.step(a))
                      for i, (h, a) in enumerate(zip(self.handles, actions))]

    def step_wait(self):
        """The batched (observations, rewards float64, terminations bool, truncations bool, infos) of the step
        sent by `step_async`; an env that was autoreset gives its reset's observation and info, reward 0. An env
        whose autoreset failed on a new actor too gives an infra fault (truncated, reward 0, ``info["outcome"] ==
        "infra_fault"``) and resets on another new actor at its next step; the other envs' results are unaffected.

        Raises:
            RuntimeError: no step in flight. As an env's actor raises (an error in the env itself), after every
            env's result was collected.
        """
        if self._refs is None:
            raise RuntimeError("step_wait called without step_async")
        refs, self._refs = self._refs, None
        observations, infos = [], {}
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        failure: BaseException | None = None
        for i, (handle, (kind, ref)) in enumerate(zip(self.handles, refs)):
            try:
                out = handle.result(ref)
            except EnvLostError as e:
                kind, out = "step", infra_fault_step(handle.env_id, str(e), 0)  # its autoreset failed on every actor
            except Exception as e:  # noqa: BLE001 - raised once every other env's result is in
                failure = failure or e
                observations.append(self._observations_of(i))
                infos = self._add_info(infos, {}, i)
                continue
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
        if failure is not None:
            raise failure
        return self._observations, rewards, terminations, truncations, infos

    def step(self, actions: Any):
        """`step_async` then `step_wait`."""
        self.step_async(actions)
        return self.step_wait()

    def placements(self) -> list[dict[str, Any]]:
        """Each env's actor's node, pid and GPU ids (`EnvHandle.placement`; ``"dead": True`` for a dead actor), in
        env order.

        Raises:
            ClosedEnvironmentError: after `close`.
        """
        self._check_open()
        return [h.placement() for h in self.handles]

    def _observations_of(self, i: int) -> Any:
        """Env `i`'s entry of the last batched observations (for an env that gave none this step)."""
        return {k: v[i] for k, v in self._observations.items()} if isinstance(self._observations, dict) \
            else self._observations[i]

    def _check_open(self) -> None:
        # A closed env's handles would otherwise start new actors to replace the ended ones.
        if self.closed:
            raise ClosedEnvironmentError("the vector env is closed (its actors were ended); make a new one")

    def close_extras(self, **kwargs: Any) -> None:
        for handle in self.handles:
            handle.close()


def make_ray_vec(env_id: str | Sequence[str], num_envs: int | None = None, *, address: str | None = None,
                 gpus_per_env: float | None = None, cpus_per_env: float | None = None, max_restarts: int = 2,
                 episode_retries: int = 1, start_timeout_s: float = START_TIMEOUT_S,
                 **env_kwargs: Any) -> RayVectorEnv:
    """A `RayVectorEnv` of `num_envs` envs of `env_id`, like ``gym.make_vec(env_id, num_envs)``.

    Args:
        env_id: an env id or task name, or one per env (then `num_envs` defaults to their count).
        num_envs: how many envs (one actor each).
        address: the Ray cluster to join (None: the connected one, or a new local instance).
        gpus_per_env: GPUs per actor (None: the cluster's GPUs shared evenly, none without GPUs; placement.py).
        cpus_per_env: CPUs per actor (None: 1, or an even share where the envs outnumber the CPUs).
        max_restarts: Ray restarts of a dead actor. episode_retries: replays of its episode (`EnvHandle`).
        start_timeout_s: seconds the actors may take to start before ActorStartTimeout.
        **env_kwargs: `KernelArenaEnv` arguments; ``run_dir`` defaults to the driver's default run directory,
            made absolute here, so every actor on this host writes where a local env would.

    Returns:
        The vector env, not yet reset.

    Raises:
        RayUnavailableError: ray is missing or the cluster cannot be reached.
        UnknownTaskError: an unknown task name. ValueError: `num_envs` disagrees with the ids given, or an explicit
            `gpus_per_env`/`cpus_per_env` the cluster cannot hold (placement.actor_options).
        ActorStartTimeout: the actors did not start within `start_timeout_s`.
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
    return RayVectorEnv(ids, env_kwargs, options, episode_retries=episode_retries, start_timeout_s=start_timeout_s)
