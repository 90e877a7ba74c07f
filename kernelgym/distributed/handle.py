"""`EnvHandle`: one env's actor seen from the driver, with what it takes to re-run the episode if it dies.

A handle keeps the current episode's seed, reset options and actions. When the actor dies during a call (kill -9,
OOM, its node lost), Ray restarts it (``max_restarts``) with a fresh env, and the handle replays the episode on it:
the same seed, then the same actions, which rebuilds the workspace the policy saw; the call's result is the replayed
one, so no reward is lost and none comes from a half-run episode. When the replays are spent (or the actor cannot
come back), the call's result is an infra fault: a truncated step with reward 0 and ``info["outcome"] ==
"infra_fault"``, so the next step resets on a new actor, as after any episode end.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
from gymnasium.error import ClosedEnvironmentError

from kernelgym.distributed.env_actor import remote_env_actor
from kernelgym.grader.outcome import INFRA_FAULT

#: Seeds drawn for resets that give none (autoresets), so a replayed episode is the same episode.
_SEED_HIGH = 2**31 - 1


def _lost() -> tuple[type[BaseException], ...]:
    """The Ray errors that mean the actor's process is gone or restarting (Ray is imported only when used)."""
    import ray.exceptions

    return ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError

#: How long a call waits for a restarting actor to come back before that try counts as failed.
RESTART_WAIT_S = 120.0


def _call_when_up(call):
    """``ray.get(call())``, called again while the actor is restarting (ActorUnavailableError), up to
    `RESTART_WAIT_S`; the last error is raised after that."""
    import ray

    deadline = time.monotonic() + RESTART_WAIT_S
    while True:
        try:
            return ray.get(call())
        except ray.exceptions.ActorUnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def infra_fault_step(env_id: str, message: str, step: int) -> tuple:
    """The step result (observation, reward 0, not terminated, truncated, info) of an env whose actor died and
    could not be brought back: ``info["outcome"]`` is ``infra_fault``, `message` says why; `step` is the episode's
    step it ends at."""
    info = {"task": env_id, "step": step, "action_kind": "none", "action_error": message, "grade": {},
            "outcome": INFRA_FAULT, "infra_error": message}
    return {"output": message, "prompt": ""}, 0.0, False, True, info


class EnvLostError(RuntimeError):
    """An env's actor died during a reset and the reset failed on a new actor too (a new one is started for the
    next call)."""


class EnvHandle:
    """One remote env and its current episode's log.

    Args:
        env_id: the env's id. env_kwargs: its `KernelArenaEnv` arguments.
        options: the actor's Ray options (placement.actor_options).
        episode_retries: replays of an episode after its actor died, before the step is reported as an infra fault.

    Attributes:
        actor: the Ray actor handle (replaced by a new actor when the old one cannot restart).
        replays: episodes replayed so far on this handle (each death survived counts one).
        closed: `close` was called; reset and step then raise ClosedEnvironmentError.
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], options: dict[str, Any], episode_retries: int = 1):
        if episode_retries < 0:
            raise ValueError(f"episode_retries must be at least 0, got {episode_retries}")
        self.env_id, self._env_kwargs, self._options = env_id, env_kwargs, options
        self.episode_retries = episode_retries
        self.actor = remote_env_actor(env_id, env_kwargs, options)
        self.replays = 0
        self.closed = False
        self._rng = np.random.default_rng()
        self._seed: int | None = None
        self._reset_options: dict[str, Any] | None = None
        self._actions: list[Any] = []
        self._pending: list[Any] = []  # the actions of the episode including the call in flight

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start a reset on the actor; returns its ObjectRef (resolve it with `result`).

        Raises:
            ClosedEnvironmentError: the handle was closed.
        """
        self._check_open()
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        else:
            seed = int(self._rng.integers(0, _SEED_HIGH))
        self._seed, self._reset_options, self._actions, self._pending = seed, options, [], []
        return self.actor.reset.remote(seed=seed, options=options)

    def step(self, action: Any):
        """Start a step on the actor; returns its ObjectRef (resolve it with `result`).

        Raises:
            ClosedEnvironmentError: the handle was closed.
        """
        self._check_open()
        self._pending = [*self._actions, action]
        return self.actor.step.remote(action)

    def result(self, ref) -> tuple:
        """The result of the call `ref` (from `reset` or `step`): (observation, info) or (observation, reward,
        terminated, truncated, info); replayed on a restarted actor if this one died.

        Raises:
            EnvLostError: a reset could not be run on any actor (a step reports an infra fault instead).
        """
        import ray

        try:
            out = ray.get(ref)
        except _lost() as e:
            out = self._recover(e)
        self._actions = self._pending
        return out

    def _replace_actor(self) -> None:
        """End the current actor (dead or not) and start a new one in the background."""
        import ray

        ray.kill(self.actor, no_restart=True)
        self.actor = remote_env_actor(self.env_id, self._env_kwargs, self._options)

    def _recover(self, error: Exception) -> tuple:
        # The first try is on the actor Ray restarts (if it has restarts left); every later try is on a new actor,
        # so an actor whose restarts are spent (or whose node is gone) is replaced. A reset has nothing to replay:
        # it always gets a try on a new actor, whatever `episode_retries` says.
        tries = self.episode_retries if self._pending else max(self.episode_retries, 1) + 1
        for attempt in range(tries):
            if attempt:
                self._replace_actor()
            try:
                out = _call_when_up(lambda: self.actor.replay.remote(self._seed, self._reset_options,
                                                                     self._pending))
            except _lost() as e:
                error = e
                continue
            self.replays += 1
            out[-1]["replays"] = self.replays
            return out
        message = (f"infra fault: the actor of {self.env_id} died and its episode could not be re-run "
                   f"({self.episode_retries} replay(s) allowed): {type(error).__name__}: {error}")
        # A new actor for the next call (the reset after this episode's end), whatever became of the old one.
        self._replace_actor()
        if not self._pending:
            raise EnvLostError(message)
        return infra_fault_step(self.env_id, message, len(self._pending))

    def placement(self) -> dict[str, Any]:
        """The actor's `EnvActor.placement` (node, pid, GPU ids) with ``"dead": False``; for an actor that is dead
        or restarting, ``{"dead": True, "error": why}`` and the other keys None (its next call recovers it)."""
        import ray

        try:
            return {**ray.get(self.actor.placement.remote()), "dead": False}
        except _lost() as e:
            return {"node_id": None, "pid": None, "gpu_ids": [], "cuda_visible_devices": None, "restarted": None,
                    "dead": True, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedEnvironmentError(f"the env {self.env_id} is closed (its actor was ended); make a new one")

    def close(self) -> None:
        """Close the env and end the actor. A dead actor is just ended; a second close does nothing."""
        import ray

        if self.closed:
            return
        self.closed = True
        try:
            ray.get(self.actor.close.remote())
        except _lost():
            pass  # dead or restarting: its env's processes went with it (bwrap --die-with-parent)
        ray.kill(self.actor, no_restart=True)
