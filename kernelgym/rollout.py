"""`rollout`: one episode of a policy in an env, the loop every runner shares."""
from __future__ import annotations

import time
from typing import Any, Callable

import gymnasium as gym

from kernelgym.policy import Policy


def rollout(env: gym.Env, policy: Policy, seed: int | None = None,
            on_step: Callable[[int, dict, dict], None] | None = None) -> dict[str, Any]:
    """Run one episode; return ``{"reward", "terminated", "truncated", "steps", "wall_s", "grade", "unseen"}``
    (``unseen`` is `UnseenConfigEval`'s result when the env is wrapped in it, else None).

    `on_step(step, action, info)` is called after every step (progress display). A policy that raises
    ends the episode with its error in the result; the env is still graded by a final submit.
    """
    start = time.monotonic()
    obs, info = env.reset(seed=seed)
    policy.reset(obs, info)
    steps, reward, terminated, truncated, error = 0, 0.0, False, False, None
    while not (terminated or truncated):
        try:
            action = policy.act(obs, info)
        except Exception as e:  # noqa: BLE001 - a broken policy still gets its kernel graded
            error, action = f"policy error: {type(e).__name__}: {e}", {"kind": "submit"}
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        if on_step:
            on_step(steps, action, info)
    return {"reward": float(reward), "terminated": terminated, "truncated": truncated, "steps": steps,
            "wall_s": time.monotonic() - start, "grade": info.get("grade", {}), "unseen": info.get("unseen"), "policy_error": error}
