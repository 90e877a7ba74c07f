"""`UnseenConfigEval`: at episode end, replay the final kernel and the original on private unseen configs."""
from __future__ import annotations

from typing import Any

import gymnasium as gym

from kernelgym.grader.score import COMPILE_POINTS
from kernelgym.unseen import evaluate_unseen, unseen_configs


class UnseenConfigEval(gym.Wrapper):
    """Adds ``info["unseen"]`` at the end of every episode (see `kernelgym.unseen.evaluate_unseen`): per-config
    results of the original and the optimized kernel on the same 8 unseen configs (each in its own process),
    the task's quadrant, unseen speedup and its gap to the seen speedup.

    The configs come from the private store (`kernelgym.unseen.store`): generated once per task, hardware kind
    and `seed`, never shown to the agent.

    Args:
        env: a KernelArena env.
        seed: which set of unseen configs.
        gate_reward: if True, an optimized kernel that fails an unseen config the original passes
            (quadrant ``opt_regression``) gets only the compile points (20): no +100 and no speedup term.
        reveal_configs: put the config values in `info` (default: only their index and category).

    Example:
        >>> env = UnseenConfigEval(gym.make("KernelArena/triton-rmsnorm-v0"), gate_reward=True)
    """

    def __init__(self, env: gym.Env, seed: int = 0, gate_reward: bool = False, reveal_configs: bool = False):
        super().__init__(env)
        self.seed, self.gate_reward, self.reveal_configs = seed, gate_reward, reveal_configs

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        base = self.env.unwrapped
        if (terminated or truncated) and info.get("grade") and getattr(base, "grade", None) is not None:
            configs, _ = unseen_configs(base.task, base.hardware, self.seed)
            result = evaluate_unseen(base.task, base.hardware, base.workspace, configs,
                                     base.episode_dir / "unseen", base.grader_config, seed=self.seed,
                                     seen_speedup=info["grade"].get("speedup"))
            result["reward_gated"] = bool(self.gate_reward and result["quadrant"] == "opt_regression"
                                          and info["grade"].get("compiled"))
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
