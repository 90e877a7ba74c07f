"""`rollout`: one episode of a policy in an env, the loop every runner shares."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable

import gymnasium as gym

from kernelgym.agent_tools import redact
from kernelgym.grader.outcome import INFRA_FAULT, POLICY_ERROR
from kernelgym.policy import Policy
from kernelgym.usage import StepUsage, episode_totals

#: The method of a wrapper (TrajectoryRecorder) that adds fields to the record of the next step.
ANNOTATE = "annotate_next_step"


def _step_info(policy: Policy, act_wall_s: float) -> tuple[dict[str, Any], StepUsage | None]:
    """The policy's report on its last act (see Policy.take_step_info) as a JSON-able dict, and its usage."""
    take = getattr(policy, "take_step_info", None)
    raw = dict(take() or {}) if take else {}
    usage = raw.pop("usage", None)
    if isinstance(usage, dict):
        usage = StepUsage.from_dict(usage)
    record = {"act_wall_s": act_wall_s, **raw}
    if usage is not None:
        record["usage"] = usage.to_dict()
    return record, usage


def _policy_error(e: BaseException) -> str:
    """The result's ``policy_error`` text for an exception the policy raised, redacted: an SDK error may quote the
    request's headers (a proxy echoing them), key included."""
    return redact(f"policy error: {type(e).__name__}: {e}")


def rollout(env: gym.Env, policy: Policy, seed: int | None = None,
            on_step: Callable[[int, dict, dict], None] | None = None) -> dict[str, Any]:
    """Run one episode; return ``{"reward", "terminated", "truncated", "steps", "wall_s", "grade", "unseen",
    "policy_error", "usage", "outcome"}`` (``outcome`` is `episode_outcome`'s; ``unseen`` is `UnseenConfigEval`'s result when the env is wrapped in it, else None;
    ``usage`` is kernelgym.usage.episode_totals: tokens, cost_usd, API calls and retries summed over the steps,
    None where the policy reports none, and ``policy_wall_s``, the seconds spent in act()).

    After every act(), the policy's step info (Policy.take_step_info, plus ``act_wall_s``) goes into the info
    passed to `on_step(step, action, info)` as ``info["policy"]``, and, when the env is wrapped in a
    TrajectoryRecorder, into that step's trajectory record. A policy that raises, in reset() or in act(), ends the
    episode with its error in the result (``policy_error``); the env is still graded by a final submit. A policy
    that gives up without raising (a CLI agent that exited or timed out without submitting) says why with a
    ``policy_error`` string in its step info, which becomes the result's ``policy_error`` too. The policy's close()
    runs at the end, also after an error.
    """
    start = time.monotonic()
    # Found through the wrapper stack, so a recorder under other wrappers (UnseenConfigEval) still gets it.
    has = getattr(env, "has_wrapper_attr", None)
    annotate = env.get_wrapper_attr(ANNOTATE) if has and has(ANNOTATE) else None
    usages: list[StepUsage | None] = []
    policy_wall_s = 0.0
    try:
        obs, info = env.reset(seed=seed)
        steps, reward, terminated, truncated, error = 0, 0.0, False, False, None
        try:
            policy.reset(obs, info)
        except Exception as e:  # noqa: BLE001 - like act() below: a policy that cannot start is still graded
            # A CLI policy checks its key and binary here, an API policy at its first act(): both end the same way
            # (policy_error, the kernel submitted as it stands and graded), so a missing key is never a crash.
            error = _policy_error(e)
        while not (terminated or truncated):
            act_start = time.monotonic()
            if error is not None:  # reset() failed, or the previous act() did: submit without asking again
                action = {"kind": "submit"}
            else:
                try:
                    action = policy.act(obs, info)
                except Exception as e:  # noqa: BLE001 - a broken policy still gets its kernel graded
                    error, action = _policy_error(e), {"kind": "submit"}
            act_wall_s = time.monotonic() - act_start
            policy_wall_s += act_wall_s
            record, usage = _step_info(policy, act_wall_s)
            # A policy that gave up without raising (a CLI that exited or timed out without submitting) says why
            # here; it is a policy error all the same, so `kernelgym run` prints it and a script can see it.
            if error is None and record.get("policy_error"):
                error = redact(f"policy error: {record['policy_error']}")
            usages.append(usage)
            if annotate:
                annotate({"policy": record})
            obs, reward, terminated, truncated, info = env.step(action)
            info = {**info, "policy": record}
            steps += 1
            if on_step:
                on_step(steps, action, info)
    finally:
        close = getattr(policy, "close", None)
        if close:
            close()
    return {"reward": float(reward), "terminated": terminated, "truncated": truncated, "steps": steps,
            "wall_s": time.monotonic() - start, "grade": info.get("grade", {}), "unseen": info.get("unseen"),
            "policy_error": error, "usage": episode_totals(usages, policy_wall_s),
            "outcome": episode_outcome(info.get("grade", {}), error)}


def episode_outcome(grade: dict, policy_error: str | None) -> str:
    """The episode's one outcome (`kernelgym.grader.outcome.OUTCOMES`): ``policy_error`` where the policy raised or
    gave up (the grade's own outcome stays in ``grade["outcome"]``), else the grade's; ``infra_fault`` for an
    episode that ended with no grade (the env failed before grading)."""
    if policy_error is not None:
        return POLICY_ERROR
    return grade.get("outcome") or INFRA_FAULT


def write_results(run_dir: Path, results: list[dict]) -> None:
    """Write `run_dir`/results.json (one row per finished episode, in episode order, each with its ``seed``), whole
    or not at all: a run killed later resumes from it (--resume). Both backends (kernelgym.cli's local runs,
    kernelgym.distributed.backend's Ray runs) write it here."""
    (run_dir / "results.json.part").write_text(json.dumps(results, indent=1, default=str))
    os.replace(run_dir / "results.json.part", run_dir / "results.json")
