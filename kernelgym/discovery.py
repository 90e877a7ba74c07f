"""Finding tasks: the built-in ones shipped in the package, plus the user's own folders."""
from __future__ import annotations

import difflib
from pathlib import Path

from kernelgym.errors import TaskSpecError, UnknownTaskError
from kernelgym.task import DEFAULT_TASKS_ROOT, Task, load_task


def discover_tasks(tasks_root: str | Path = DEFAULT_TASKS_ROOT) -> dict[str, Task]:
    """Every task under ``tasks_root`` (any folder holding task.yaml), keyed by name (``triton-rmsnorm``).

    Raises:
        TaskSpecError: a task.yaml is malformed, or two tasks share a name.
    """
    tasks: dict[str, Task] = {}
    root = Path(tasks_root)
    if not root.is_dir():
        return tasks
    for yml in sorted(root.rglob("task.yaml")):
        task = load_task(yml.parent)
        if task.name in tasks:
            raise TaskSpecError(f"{yml}: task name {task.name!r} already used by {tasks[task.name].root}")
        tasks[task.name] = task
    return tasks


def get_task(name: str, tasks_root: str | Path = DEFAULT_TASKS_ROOT) -> Task:
    """Find a task by name (``triton-rmsnorm``), env id (``KernelArena/triton-rmsnorm-v0``) or path.

    Raises:
        UnknownTaskError: no such task; the message offers close matches.
    """
    if Path(name).is_dir() and (Path(name) / "task.yaml").is_file():
        return load_task(name)
    key = name.removeprefix("KernelArena/")
    if key.rsplit("-v", 1)[-1].isdigit() and "-v" in key:
        key = key.rsplit("-v", 1)[0]
    tasks = discover_tasks(tasks_root)
    if key in tasks:
        return tasks[key]
    close = difflib.get_close_matches(key, tasks, n=3)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise UnknownTaskError(f"Unknown task {name!r}.{hint} Known tasks: {', '.join(sorted(tasks)) or '(none)'}; "
                           f"`kernelgym list` shows them.")
