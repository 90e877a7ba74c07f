"""`UnseenConfigEval`: at episode end, replay the final kernel and the original on private unseen configs."""
from __future__ import annotations

from typing import Any

import gymnasium as gym

from kernelgym.grader.score import COMPILE_POINTS
from kernelgym.unseen import evaluate_unseen, unseen_configs


def gate_decision(result: dict[str, Any], compiled: bool, gate_reward: bool,
                  allow_partial_coverage: bool = False) -> tuple[bool, str]:
    """Whether `UnseenConfigEval` cuts a reward to the compile points, and why, from `evaluate_unseen`'s `result`.

    Returns (gated, gate): gate is ``"off"`` (no `gate_reward`), ``"not compiled"`` (nothing above the compile
    points to cut), ``"gated: opt_regression"``, ``"gated: coverage partial (not run: ...)"`` (the evaluation did not
    cover the whole space and `allow_partial_coverage` is False), ``"passed on what was covered"`` or ``"passed"``.
    A reward is never let through as checked where no unseen config ran."""
    if not gate_reward:
        return False, "off"
    if not compiled:
        return False, "not compiled"
    if result["quadrant"] == "opt_regression":
        return True, "gated: opt_regression"
    if result.get("covered") is True:  # a result that does not say what it covered vouches for nothing
        return False, "passed"
    if allow_partial_coverage:
        return False, "passed on what was covered"
    gaps = "; ".join(g.get("region") or f"dtype {g.get('dtype')}" for g in result.get("not_covered", []))
    return True, f"gated: coverage partial (not run: {gaps})"


class UnseenConfigEval(gym.Wrapper):
    """Adds ``info["unseen"]`` at the end of every episode (see `kernelgym.unseen.evaluate_unseen`): per-config
    results of the original and the optimized kernel on the same 8 unseen configs (each in its own process),
    the task's quadrant, unseen speedup and its gap to the seen speedup, and what the configs covered.

    Coverage: on the CPU interpreter the unseen configs are kept under its budget (2^18 elements) and to its dtypes
    (`config_space.interpreter_dtypes`), so part of the task's space is never run. ``info["unseen"]["not_covered"]``
    lists what was left out and why; ``covered`` is False and ``claim`` reads e.g. ``"both_pass on what was
    covered"``: a kernel that returns zeros above 2^18 elements lands in both_pass there, and nothing says more than
    that. On a GPU every region runs (``not_covered`` is empty, ``covered`` True).

    The configs come from the private store (`kernelgym.unseen.store`): generated once per task, hardware kind
    and `seed`, never shown to the agent.

    Args:
        env: a KernelArena env.
        seed: which set of unseen configs.
        gate_reward: if True, the reward passes only what the unseen evaluation vouches for: an optimized kernel
            that fails an unseen config the original passes (quadrant ``opt_regression``) gets only the compile
            points (20), no +100 and no speedup term; so does any kernel whose evaluation covered the space only in
            part (every episode on the CPU interpreter), since no unseen check ran where it was not covered.
            ``info["unseen"]["gate"]`` says which (`gate_decision`).
        allow_partial_coverage: with `gate_reward`, let a reward through on partial coverage when no regression
            was seen (``gate``: ``"passed on what was covered"``): for training on the interpreter, knowing the
            gate there checks only small sizes and the interpreter's dtypes.
        reveal_configs: put the config values in `info` (default: only their index and category).

    Example:
        >>> env = UnseenConfigEval(gym.make("KernelArena/triton-rmsnorm-v0"), gate_reward=True)
    """

    def __init__(self, env: gym.Env, seed: int = 0, gate_reward: bool = False, reveal_configs: bool = False,
                 allow_partial_coverage: bool = False):
        super().__init__(env)
        self.seed, self.gate_reward, self.reveal_configs = seed, gate_reward, reveal_configs
        self.allow_partial_coverage = allow_partial_coverage

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        base = self.env.unwrapped
        if (terminated or truncated) and info.get("grade") and getattr(base, "grade", None) is not None:
            configs, _ = unseen_configs(base.task, base.hardware, self.seed)
            result = evaluate_unseen(base.task, base.hardware, base.workspace, configs,
                                     base.episode_dir / "unseen", base.grader_config, seed=self.seed,
                                     seen_speedup=info["grade"].get("speedup"))
            result["reward_gated"], result["gate"] = gate_decision(result, bool(info["grade"].get("compiled")),
                                                                   self.gate_reward, self.allow_partial_coverage)
            if result["reward_gated"]:
                reward = min(float(reward), COMPILE_POINTS)
            if not self.reveal_configs:  # info may reach a policy or a log: keep the values private
                for i, row in enumerate(result["configs"]):
                    row["config"] = f"unseen-{i} ({row['category']})"
                    # Error texts name the config and can carry anything the kernel printed: reduced to whether
                    # there was one.
                    for key in ("original_error", "optimized_error"):
                        if row.get(key):
                            row[key] = "failed (message withheld: it may name the unseen config; reveal_configs=True "\
                                       "shows it)"
            info = {**info, "unseen": result}
        return obs, reward, terminated, truncated, info
