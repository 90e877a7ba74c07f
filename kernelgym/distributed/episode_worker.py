"""`EpisodeWorker`: a Ray actor that runs whole episodes of ``kernelgym run`` (policy and env side by side).

The policy runs next to its env, as in the local backend: an agent CLI works in the env's workspace, which lives on
the actor's node. The worker keeps the env and policy of the last run it served, reused by that run's next episode
on this worker (as the local backend reuses them from one episode to the next). Ray restarts a worker whose process
died and re-runs the episode that was in flight, from its reset, with the same seed (``max_task_retries``).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any


def episode_env_dir(run_dir: str) -> Path:
    """Where a run's episode folders live on this node: the run directory itself where this node sees it (the
    driver's host, or a shared file system), else a folder of the same name under this node's temp directory."""
    path = Path(run_dir)
    if path.is_dir() and os.access(path, os.W_OK):
        return path
    return Path(tempfile.gettempdir()) / "kernelgym-ray-runs" / path.name


class EpisodeWorker:
    """Runs episodes of runs described by their settings (the run's run.json, plus ``run_dir``); holds the env and
    policy of the last run it served."""

    def __init__(self):
        self._runs: dict[str, tuple[Any, Any, Path]] = {}  # run_dir -> (recorded env, policy, trajectory file)

    def _open(self, settings: dict[str, Any]):
        from kernelgym.env import KernelArenaEnv
        from kernelgym.grader import GraderConfig
        from kernelgym.hardware import detect_profile, hardware_search_path
        from kernelgym.policy import load_policy
        from kernelgym.task_format import resolve_task
        from kernelgym.wrappers import TrajectoryRecorder

        s = argparse.Namespace(**settings)
        overrides = json.loads(s.policy_config) if s.policy_config else {}
        policy = load_policy(s.policy, policies_dir=s.policies_dir, **overrides)
        task = resolve_task(s.task, tasks_dir=s.tasks_dir)
        hardware = detect_profile(s.hardware, root=hardware_search_path(s.hardware_dir) if s.hardware_dir else None)
        sandbox = "none" if s.no_sandbox else "bwrap"
        grader = GraderConfig(warmup=s.warmup, reps=s.reps, rounds=s.rounds, sandbox=sandbox)
        env = KernelArenaEnv(task, run_dir=episode_env_dir(s.run_dir), hardware=hardware, sandbox=sandbox,
                             max_steps=s.max_steps, max_wall_s=s.max_wall_s, grader=grader,
                             command_timeout_s=s.command_timeout_s)
        # Trajectory lines go to a file of this worker's and back to the driver, which appends them in episode order.
        trajectory = Path(tempfile.mkdtemp(prefix="kernelgym-ray-")) / "trajectories.jsonl"
        return TrajectoryRecorder(env, trajectory), policy, trajectory

    def run_episode(self, settings: dict[str, Any], episode: int) -> tuple[dict[str, Any], list[str]]:
        """Run episode `episode` (seed ``settings["seed"] + episode``) of the run `settings` describes.

        Returns:
            (the rollout's result, as the local backend stores it in results.json; the episode's trajectory lines).

        Raises:
            As `kernelgym run` raises for a task, policy or hardware it cannot use (KernelGymError).
        """
        from kernelgym.rollout import rollout

        key = settings["run_dir"]
        if key not in self._runs:
            self.close()  # one env at a time per worker: each holds grading processes started ahead
            self._runs[key] = self._open(settings)
        env, policy, trajectory = self._runs[key]
        start = trajectory.stat().st_size if trajectory.exists() else 0
        result = rollout(env, policy, seed=settings["seed"] + episode)
        with trajectory.open("rb") as f:
            f.seek(start)
            lines = f.read().decode().splitlines()
        return result, lines

    def pid(self) -> int:
        """This worker's process id."""
        return os.getpid()

    def close(self) -> None:
        """Close every env this worker holds, and remove its trajectory folders (their lines went back to the driver
        with each episode's result)."""
        for env, _, trajectory in self._runs.values():
            env.close()
            shutil.rmtree(trajectory.parent, ignore_errors=True)
        self._runs.clear()
