"""`TrajectoryRecorder`: appends every step of every episode to a JSONL file as it happens."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

TRAJECTORY_FORMAT = "kernelgym.trajectory/1"


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and callable(x.item):  # numpy scalars
        return x.item()
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    return str(x)


class TrajectoryRecorder(gym.Wrapper):
    """Appends one JSON line per reset and per step to `path`, flushed at once (a crash keeps the log).

    Each line: ``{"format", "episode_id", "t", "event": "reset"|"step"|"error", "action", "observation",
    "reward", "terminated", "truncated", "info", "time"}``, and on a step whatever `annotate_next_step` added
    (rollout adds ``policy``: the policy's report on the act that chose the action, its token use and cost; see
    kernelgym.policy.Policy). The format string is versioned (`TRAJECTORY_FORMAT`); bump it when a field changes.

    Example:
        >>> env = TrajectoryRecorder(gym.make("KernelArena/triton-rmsnorm-v0"), "run/trajectories.jsonl")
    """

    def __init__(self, env: gym.Env, path: str | Path):
        super().__init__(env)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.t = 0
        self.episode_id = None
        self._annotation: dict[str, Any] = {}

    def annotate_next_step(self, fields: dict[str, Any]) -> None:
        """Add `fields` to the record of the next step (or error); rollout gives the policy's step info here."""
        self._annotation.update(fields)

    def _write(self, record: dict) -> None:
        record = {"format": TRAJECTORY_FORMAT, "episode_id": self.episode_id, "t": self.t, "time": time.time(),
                  **record}
        with self.path.open("a") as f:
            f.write(json.dumps(_jsonable(record)) + "\n")

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.episode_id = getattr(self.env.unwrapped, "episode_id", None)
        self.t = 0
        self._annotation = {}
        self._write({"event": "reset", "observation": obs, "info": info})
        return obs, info

    def step(self, action):
        annotation, self._annotation = self._annotation, {}
        try:
            obs, reward, terminated, truncated, info = self.env.step(action)
        except BaseException as e:
            self._write({"event": "error", "action": action, "error": repr(e), **annotation})
            raise
        self.t += 1
        self._write({"event": "step", "action": action, "observation": obs, "reward": reward,
                     "terminated": terminated, "truncated": truncated, "info": info, **annotation})
        return obs, reward, terminated, truncated, info
