"""Registers each discovered task with Gymnasium on import (entry-point plugins were removed in gymnasium 1.0)."""
from __future__ import annotations

from pathlib import Path

import gymnasium as gym

from kernelgym.discovery import discover_tasks
from kernelgym.task import DEFAULT_TASKS_ROOT

ENTRY_POINT = "kernelgym.env:KernelArenaEnv"


def register_tasks(tasks_root: str | Path = DEFAULT_TASKS_ROOT) -> list[str]:
    """Register every task under `tasks_root` as ``KernelArena/<language>-<name>-v<N>``; returns the ids.

    The entry point is a string (specs are saved as JSON, e.g. by Minari); `nondeterministic=True`
    because GPU timings vary. Tasks from another root keep their directory in the spec's kwargs.
    """
    ids = []
    for name, task in discover_tasks(tasks_root).items():
        if task.env_id not in gym.registry:
            task_arg = name if Path(tasks_root).resolve() == DEFAULT_TASKS_ROOT else str(task.root)
            gym.register(id=task.env_id, entry_point=ENTRY_POINT, nondeterministic=True, kwargs={"task": task_arg})
        ids.append(task.env_id)
    return ids
