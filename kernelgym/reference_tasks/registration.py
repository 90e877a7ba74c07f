"""Registers each reference-format task folder on the search path as ``KernelArena/<task_type>-<folder>-v0``.

Called by `kernelgym.register_tasks` (so ``$KERNELGYM_TASKS_PATH`` folders register on ``import kernelgym``, and
``kernelgym.register_tasks(tasks_dir=DIR)`` registers DIR's). Tasks that cannot run on this machine's hardware are
registered too: making one raises `UnsupportedTaskError` with the reason, rather than a bare "unknown id".
"""
from __future__ import annotations

import gymnasium as gym

from kernelgym.discovery import Dirs, warn_once
from kernelgym.reference_tasks.spec import discover_reference_tasks, reference_search_path

ENTRY_POINT = "kernelgym.env:KernelArenaEnv"  # the one env; it takes the folder (task_format.py)


def register_reference_tasks(tasks_dir: Dirs = None) -> list[str]:
    """Register every reference task under $KERNELGYM_TASKS_PATH and `tasks_dir`; returns their env ids.

    A task is registered by its folder (``kwargs={"task": folder}``), so its spec makes the same env in any process.
    A broken config.yaml, or an id already registered for another task, warns once (`DiscoveryWarning`)."""
    tasks, problems = discover_reference_tasks(reference_search_path(tasks_dir))
    for problem in problems:
        warn_once(f"reference task skipped: {problem.message}")
    ids = []
    for task in tasks.values():
        spec = gym.registry.get(task.env_id)
        if spec is None:
            gym.register(id=task.env_id, entry_point=ENTRY_POINT, nondeterministic=True,
                         kwargs={"task": str(task.root)})
        elif spec.kwargs.get("task") != str(task.root):
            warn_once(f"reference task skipped: {task.root}: {task.env_id} is already registered for "
                      f"{spec.kwargs.get('task')!r}; rename one folder")
            continue
        ids.append(task.env_id)
    return ids
