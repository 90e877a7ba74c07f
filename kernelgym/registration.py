"""Registers each discovered task with Gymnasium on import (entry-point plugins were removed in gymnasium 1.0),
and makes Text observations survive `AsyncVectorEnv`'s shared memory.

Tasks come from the search path (kernelgym.discovery): the built-in ones, ``$KERNELGYM_TASKS_PATH``, and the
folders passed to `register_tasks`. A broken task.yaml, or a user task reusing a taken name, is skipped with one
warning naming the file; every other task is still registered.

Vector envs: ``gym.make_vec(id, num_envs=N, vectorization_mode="async")`` builds an `AsyncVectorEnv` with
``shared_memory=True``. Gymnasium 1.4 decodes Text observations out of that shared block once, when the vector
env is made, into immutable strings; every later reset and step returns those strings (all padding: runs of the
charset's first character, a tab here). A spec default cannot turn shared memory off: `make_vec` passes a spec's
``vector_kwargs`` to `SyncVectorEnv` too, which refuses ``shared_memory``, and `make` hands spec kwargs to the
env's constructor; ``vector_entry_point`` is skipped whenever a mode is named. So this module registers a Text
reader for the shared block that decodes on every read instead (`SharedTextBatch`): plain ``make_vec`` calls then
work in "async" and "sync" mode alike, with or without ``shared_memory``.
"""
from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Text
from gymnasium.vector.utils.shared_memory import read_from_shared_memory

from kernelgym.discovery import Dirs, discover_tasks_report, is_builtin, task_search_path, warn_once
from kernelgym.reference_tasks.registration import register_reference_tasks

ENTRY_POINT = "kernelgym.env:KernelArenaEnv"


def register_tasks(tasks_dir: Dirs = None) -> list[str]:
    """Register every task on the search path as ``KernelArena/<language>-<name>-v<N>``, and every reference-format
    task folder (config.yaml; kernelgym/reference_tasks) as ``KernelArena/<task_type>-<folder>-v0``; returns the ids.

    Args:
        tasks_dir: the user's task folders, searched after the built-in root and $KERNELGYM_TASKS_PATH.

    Returns:
        The ids of every good task on the search path (registered now or before).

    The entry point is a string (specs are saved as JSON, e.g. by Minari); `nondeterministic=True` because GPU
    timings vary. A built-in task is registered by name; a user task by its directory, so the spec makes the
    same env in any process (an `AsyncVectorEnv` worker, a later replay) whatever its search path. Broken
    folders warn once each (`DiscoveryWarning`) and are skipped.
    """
    tasks, problems = discover_tasks_report(task_search_path(tasks_dir))
    for problem in problems:
        warn_once(f"task skipped: {problem.message}")
    ids = []
    for name, task in tasks.items():
        task_arg = name if is_builtin(task) else str(task.root)
        spec = gym.registry.get(task.env_id)
        if spec is None:
            gym.register(id=task.env_id, entry_point=ENTRY_POINT, nondeterministic=True, kwargs={"task": task_arg})
        elif spec.kwargs.get("task") not in (task_arg, name):
            warn_once(f"task skipped: {task.root / 'task.yaml'}: {task.env_id} is already registered for "
                      f"{spec.kwargs.get('task')!r}; give one of them another `id`")
            continue
        ids.append(task.env_id)
    return ids + register_reference_tasks(tasks_dir)


class SharedTextBatch(Sequence):
    """The strings of one Text space across the envs of an `AsyncVectorEnv`, decoded from its shared memory
    block each time they are read.

    `AsyncVectorEnv` returns ``deepcopy(observations)`` by default (``copy=True``): that gives a plain tuple of
    str, as `SyncVectorEnv` returns. With ``copy=False`` this live view is returned, like the arrays of other
    spaces, which also change under the caller on the next step.
    """

    def __init__(self, space: Text, shared_memory, n: int):
        self._codes = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape(n, space.max_length)
        # Code point of each character index; the padding index (len of the charset) is dropped on read.
        self._code_points = np.array([ord(c) for c in space.character_list], dtype="<u4")

    def __len__(self) -> int:
        return self._codes.shape[0]

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        row = self._codes[index]
        return self._code_points[row[row < len(self._code_points)]].tobytes().decode("utf-32-le")

    def __deepcopy__(self, memo) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (Sequence, np.ndarray)) else other)

    def __repr__(self) -> str:
        return f"SharedTextBatch({tuple(self)!r})"


@read_from_shared_memory.register(Text)
def _read_text_from_shared_memory(space: Text, shared_memory, n: int = 1) -> SharedTextBatch:
    return SharedTextBatch(space, shared_memory, n)
