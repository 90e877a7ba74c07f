"""Finding tasks: the built-in ones shipped in the package, plus the user's own folders.

The search path is, in order: the built-in root (the repository's ``tasks/``), each folder of ``KERNELGYM_TASKS_PATH``
(separated by ``os.pathsep``), then the folders given as ``tasks_dir``. A task is any folder holding
``task.yaml``; tasks do not nest, so the folders inside a task are not searched.

Discovery is robust: a broken task.yaml (or a user task reusing another task's name) is collected as a
`TaskProblem` and the other tasks load as usual, so one bad file never breaks ``import kernelgym``.
"""
from __future__ import annotations

import difflib
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, NamedTuple, Union

import yaml

from kernelgym.errors import KernelGymError, TaskSpecError, UnknownTaskError
from kernelgym.task import DEFAULT_TASKS_ROOT, Task, load_task

#: Environment variable listing the user's task folders, separated by os.pathsep (":" on Linux).
TASKS_PATH_ENV = "KERNELGYM_TASKS_PATH"

PathLike = Union[str, Path]
#: One folder or several (``--tasks-dir`` may be repeated).
Dirs = Union[PathLike, Iterable[PathLike], None]


@dataclass(frozen=True)
class TaskProblem:
    """A task folder that could not be used.

    Attributes:
        path: the task.yaml (or the search-path folder) at fault.
        message: why, naming the file and the field (the `TaskSpecError` text).
        name: the task name the folder would have had (``<language>-<id>``), where it can be told.
        kind: ``"broken"`` (task.yaml does not load), ``"duplicate"`` (its name is already taken) or
            ``"missing"`` (a search-path folder that does not exist).
    """

    path: Path
    message: str
    name: str | None = None
    kind: str = "broken"


class TaskDiscovery(NamedTuple):
    """What `discover_tasks_report` found: the good tasks by name, and the folders that failed."""

    tasks: dict[str, Task]
    problems: list[TaskProblem]


def as_dirs(dirs: Dirs) -> list[Path]:
    """`dirs` (None, one path, or an iterable of paths) as a list of paths."""
    if dirs is None:
        return []
    if isinstance(dirs, (str, Path)):
        return [Path(dirs)]
    return [Path(d) for d in dirs]


def env_dirs(variable: str) -> list[Path]:
    """The folders listed in the environment variable `variable` (os.pathsep-separated; empty entries skipped)."""
    return [Path(p) for p in os.environ.get(variable, "").split(os.pathsep) if p.strip()]


class DiscoveryWarning(UserWarning):
    """A task, policy or hardware profile on the search path was skipped; the message says why and how to fix it."""


_warned: set[str] = set()


def warn_once(message: str) -> None:
    """`warnings.warn` `message` as a `DiscoveryWarning`, at most once per process (discovery runs many times)."""
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, DiscoveryWarning, stacklevel=3)


def task_search_path(tasks_dir: Dirs = None) -> list[Path]:
    """Where tasks are looked for: the built-in root, ``$KERNELGYM_TASKS_PATH``, then `tasks_dir`."""
    return [DEFAULT_TASKS_ROOT, *env_dirs(TASKS_PATH_ENV), *as_dirs(tasks_dir)]


def is_builtin(task: Task) -> bool:
    """True when `task` ships with the package (lives under the built-in root)."""
    return Path(task.root).resolve().is_relative_to(DEFAULT_TASKS_ROOT)


#: The record each episode's folder holds (`KernelArenaEnv.reset` writes it): a folder holding it is never searched for
#: tasks, since its workspace is the agent's to fill (a task planted there would shadow or block the real one).
EPISODE_RECORD = "episode.json"


def _task_folders(root: Path) -> list[Path]:
    """Every folder under `root` (itself included) holding task.yaml, sorted; hidden folders, __pycache__ and episode
    folders (`EPISODE_RECORD`) skipped."""
    found = []
    for here, subdirs, files in os.walk(root):
        if EPISODE_RECORD in files:
            subdirs[:] = []
        elif "task.yaml" in files:
            found.append(Path(here))
            subdirs[:] = []  # a task's own subfolders are its data, not more tasks
        else:
            subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d != "__pycache__")
    return sorted(found)


def _guess_name(folder: Path) -> str | None:
    """The name a broken task would have had, read leniently from its task.yaml (for messages and `get_task`)."""
    try:
        raw = yaml.safe_load((folder / "task.yaml").read_text())
    except (OSError, ValueError, yaml.YAMLError):
        raw = None
    if isinstance(raw, dict) and isinstance(raw.get("language"), str) and isinstance(raw.get("id"), str):
        return f"{raw['language']}-{raw['id']}"
    return f"{folder.parent.name}-{folder.name}"


def discover_tasks_report(roots: Dirs = None) -> TaskDiscovery:
    """Every task under `roots`, and every folder that failed to load.

    Args:
        roots: folders to search, in order; None: `task_search_path()` (built-in root and $KERNELGYM_TASKS_PATH).

    Returns:
        `TaskDiscovery(tasks, problems)`: `tasks` maps each name (``triton-rmsnorm``) to its `Task`; `problems`
        lists each broken task.yaml, each task whose name an earlier one already took (both paths named), and
        each search folder that does not exist.
    """
    tasks: dict[str, Task] = {}
    problems: list[TaskProblem] = []
    seen_folders: set[Path] = set()
    for root in (task_search_path() if roots is None else as_dirs(roots)):
        root = root.expanduser().resolve()
        if not root.is_dir():
            problems.append(TaskProblem(root, f"{root}: a folder on the task search path is not a directory "
                                              f"(check ${TASKS_PATH_ENV} and --tasks-dir)", kind="missing"))
            continue
        for folder in _task_folders(root):
            if folder in seen_folders:  # the same folder reached from two overlapping roots
                continue
            seen_folders.add(folder)
            try:
                task = load_task(folder)
            # A task's files are the user's: unreadable or undecodable ones count as broken, like a bad field.
            except (KernelGymError, OSError, ValueError) as e:
                problems.append(TaskProblem(folder / "task.yaml", str(e), _guess_name(folder)))
                continue
            if task.name in tasks:
                first = tasks[task.name].root
                problems.append(TaskProblem(
                    folder / "task.yaml",
                    f"{folder / 'task.yaml'}: task name {task.name!r} is already taken by "
                    f"{'the built-in task' if is_builtin(tasks[task.name]) else 'the task'} at {first}; "
                    f"give one of them another `id` (task names must be unique across the search path)",
                    task.name, kind="duplicate"))
                continue
            tasks[task.name] = task
    return TaskDiscovery(tasks, problems)


def discover_tasks(roots: Dirs = None) -> dict[str, Task]:
    """The tasks that load under `roots` (None: built-in root and $KERNELGYM_TASKS_PATH), keyed by name.

    Broken folders are left out; `discover_tasks_report` lists them with their errors.
    """
    return discover_tasks_report(roots).tasks


def parse_task_name(name: str) -> tuple[str, int | None]:
    """Name and version of an env id or name: ``KernelArena/triton-rmsnorm-v0`` -> (``triton-rmsnorm``, 0);
    ``triton-rmsnorm`` -> (``triton-rmsnorm``, None)."""
    key = name.removeprefix("KernelArena/")
    base, sep, version = key.rpartition("-v")
    if sep and base and version.isdigit():
        return base, int(version)
    return key, None


def get_task(name: str, tasks_dir: Dirs = None) -> Task:
    """Find a task by name (``triton-rmsnorm``), env id (``KernelArena/triton-rmsnorm-v0``) or directory.

    Args:
        name: the task's name, env id, or a directory holding task.yaml.
        tasks_dir: the user's task folders searched after the built-in root and $KERNELGYM_TASKS_PATH.

    Raises:
        TaskSpecError: the task's folder was found but its task.yaml is broken, or its name is taken twice.
        UnknownTaskError: no such task, or not at that version; the message offers close matches.
    """
    if Path(name).is_dir() and (Path(name) / "task.yaml").is_file():
        return load_task(name)
    if Path(name).is_dir() and (Path(name) / "config.yaml").is_file():
        raise UnknownTaskError(f"{name} is a task folder of the reference arena's format (config.yaml), not a "
                               f"kernelgym task: load it with kernelgym.reference_tasks.load_reference_task({name!r}); "
                               f"KernelArenaEnv({name!r}) takes it as it is (docs/REFERENCE_TASKS.md)")
    if os.sep in name and not name.startswith("KernelArena/"):  # meant as a folder
        what = "is a folder without task.yaml or config.yaml" if Path(name).is_dir() else "does not exist"
        raise UnknownTaskError(f"Unknown task {name!r}: it looks like a task folder, and {what}. A task folder holds "
                               f"task.yaml (docs/TASKS.md) or the reference format's config.yaml")
    key, version = parse_task_name(name)
    tasks, problems = discover_tasks_report(task_search_path(tasks_dir))
    for p in problems:  # a mistyped folder would otherwise pass unnoticed while a built-in task is found
        if p.kind == "missing":
            warn_once(p.message)
    if key in tasks:
        task = tasks[key]
        if version is not None and version != task.spec.version:
            raise UnknownTaskError(f"Unknown task {name!r}: task {key!r} is at version {task.spec.version} "
                                   f"({task.env_id}), not v{version}.")
        for p in problems:  # a user task reusing this name is refused, not silently shadowed
            if p.kind == "duplicate" and p.name == key:
                raise TaskSpecError(p.message)
        return task
    for p in problems:
        if p.name == key:
            raise TaskSpecError(f"Task {name!r} cannot be loaded: {p.message}")
    close = difflib.get_close_matches(key, tasks, n=3)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    broken = f" {len(problems)} task folder(s) failed to load;" if problems else ""
    raise UnknownTaskError(f"Unknown task {name!r}.{hint} Known tasks: {', '.join(sorted(tasks)) or '(none)'};"
                           f"{broken} `kernelgym list` shows them. Add your own folders with --tasks-dir or "
                           f"${TASKS_PATH_ENV}.")
