"""`list_tasks`: the tasks on the search path as small records, filtered by language, kind, hardware and difficulty.

    import kernelgym
    for t in kernelgym.list_tasks(language="triton", hardware="cpu-interpreter", difficulty="easy"):
        env = gym.make(t.env_id)

The records are what ``kernelgym list`` shows: the hardware column is the profiles the task's language runs on,
less those the task declares it cannot use (``unsupported_hardware`` in task.yaml). Only ``task.yaml`` tasks are
listed; reference-format folders (config.yaml) are made by their own env (docs/REFERENCE_TASKS.md).
"""
from __future__ import annotations

from collections.abc import Iterable
import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

from kernelgym.discovery import Dirs, discover_tasks, task_search_path
from kernelgym.task import TaskKind, TaskSpec

#: The difficulty levels task.yaml may declare.
DIFFICULTIES: tuple[str, ...] = get_args(get_args(TaskSpec.model_fields["difficulty"].annotation)[0])
#: The task kinds task.yaml may declare.
KINDS: tuple[str, ...] = get_args(TaskKind)

Filter = str | Iterable[str] | None


@dataclass(frozen=True)
class TaskInfo:
    """One task as `list_tasks` returns it.

    Attributes:
        env_id: the Gymnasium id, ``KernelArena/<language>-<name>-v<N>`` (what ``gym.make`` takes).
        name: ``<language>-<name>``, e.g. ``triton-rmsnorm`` (what ``kernelgym run --task`` takes).
        language: the backend that builds the kernel: ``triton`` or ``cuda``.
        kind: the task kind, e.g. ``triton2triton`` (make a kernel faster) or ``torch2cuda`` (replace a PyTorch
            module with kernels).
        difficulty: ``easy``, ``medium``, ``hard``, or None where task.yaml declares none.
        hardware: ids of the hardware profiles that can grade the task (``cpu-interpreter``, ``h200``, ...), sorted.
        seen_configs: the number of configs graded on a GPU.
        interpreter_configs: the number of configs graded on the CPU interpreter instead.
        description: the task's one-paragraph description.
        root: the task folder.
    """

    env_id: str
    name: str
    language: str
    kind: str
    difficulty: str | None
    hardware: tuple[str, ...]
    seen_configs: int
    interpreter_configs: int
    description: str = field(repr=False)
    root: Path = field(repr=False)


def _wanted(argument: str, value: Filter, valid: Iterable[str]) -> set[str] | None:
    """`value` (one string, several, or None for any) as a set, checked against `valid`.

    Raises:
        ValueError: a value is not in `valid`; the message names the argument and the valid values.
    """
    if value is None:
        return None
    values = {value} if isinstance(value, str) else set(value)
    valid = sorted(set(valid))
    unknown = sorted(v for v in values if v not in valid)
    if unknown:
        close = difflib.get_close_matches(unknown[0], valid, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"list_tasks({argument}=...): unknown {argument} {', '.join(map(repr, unknown))}{hint}; "
                         f"valid values: {', '.join(valid) or '(none)'}")
    return values


def list_tasks(language: Filter = None, kind: Filter = None, hardware: Filter = None, difficulty: Filter = None,
               *, tasks_dir: Dirs = None, hardware_dir: Dirs = None) -> list[TaskInfo]:
    """The tasks on the search path that match every filter given, sorted by env id.

    Args:
        language: ``triton``, ``cuda``, ... (a language with a backend), or several of them; None: any.
        kind: a task kind (`KINDS`: ``triton2triton``, ``torch2cuda``, ...), or several; None: any.
        hardware: a hardware profile id (``cpu-interpreter``, ``h200``, ...), or several: tasks that at least one
            of them can grade; None: any.
        difficulty: ``easy``, ``medium`` or ``hard``, or several; None: any (tasks without one included).
        tasks_dir: the user's task folders, searched after the built-in ones and $KERNELGYM_TASKS_PATH.
        hardware_dir: the user's hardware profile folders, after the built-in ones and $KERNELGYM_HARDWARE_PATH.

    Returns:
        A list of `TaskInfo`, possibly empty. Broken task folders are left out (``kernelgym list`` names them).

    Raises:
        ValueError: a filter value is not a known language, kind, hardware profile id or difficulty; the message
            lists the valid values.
    """
    from kernelgym.backends import available_languages
    from kernelgym.hardware import discover_profiles, hardware_search_path

    tasks = discover_tasks(task_search_path(tasks_dir))
    profiles = discover_profiles(hardware_search_path(hardware_dir)).profiles
    languages = _wanted("language", language, [*available_languages(), *(t.spec.language for t in tasks.values())])
    kinds = _wanted("kind", kind, KINDS)
    hardware_ids = _wanted("hardware", hardware, profiles)
    difficulties = _wanted("difficulty", difficulty, DIFFICULTIES)
    found = []
    for task in tasks.values():
        spec = task.spec
        supported = tuple(sorted(p.id for p in profiles.values()
                                 if p.supports(spec.language) and not task.unsupported_reason(p)))
        if ((languages is not None and spec.language not in languages)
                or (kinds is not None and spec.kind not in kinds)
                or (hardware_ids is not None and not hardware_ids.intersection(supported))
                or (difficulties is not None and spec.difficulty not in difficulties)):
            continue
        found.append(TaskInfo(env_id=task.env_id, name=task.name, language=spec.language, kind=spec.kind,
                              difficulty=spec.difficulty, hardware=supported, seen_configs=len(spec.seen_configs),
                              interpreter_configs=len(spec.interpreter_configs), description=spec.description,
                              root=Path(task.root)))
    return sorted(found, key=lambda t: t.env_id)
