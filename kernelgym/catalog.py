"""`list_tasks`: the tasks on the search path as small records, filtered by language, kind, hardware and difficulty;
`task_dataset`: the same tasks as a Hugging Face dataset of prompts (one row per task and seed) for RL trainers.

    import kernelgym
    for t in kernelgym.list_tasks(language="triton", hardware="cpu-interpreter", difficulty="easy"):
        env = gym.make(t.env_id)

The records are what ``kernelgym list`` shows: the hardware column is the profiles the task's language runs on,
less those the task declares it cannot use (``unsupported_hardware`` in task.yaml). Only ``task.yaml`` tasks are
listed; reference-format folders (config.yaml) are made by their own env (docs/REFERENCE_TASKS.md).

    ds = kernelgym.task_dataset(language="triton", difficulty="easy", seeds=range(4))  # needs kernelgym[data]
"""
from __future__ import annotations

from collections.abc import Iterable
import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

from kernelgym.discovery import Dirs, discover_tasks, task_search_path
from kernelgym.hardware import HardwareProfile
from kernelgym.task import Task, TaskKind, TaskSpec

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


#: What a dataset row's prompt says where the reset prompt names the episode's workspace (made at reset, so unknown
#: when the dataset is built).
WORKSPACE_PLACEHOLDER = "(the episode's workspace folder: every command runs in it)"

#: The user message of ``prompt="short"`` rows, for trainers whose env appends the task prompt at reset (TRL's
#: environment_factory: `KernelArenaTRLEnv.reset` returns it and TRL adds it to the last user message).
SHORT_INSTRUCTION = "Optimize this GPU kernel with the tools, keep it correct, then submit."

_PROMPT_STYLES = ("task", "short")


def task_prompt(task: str, *, hardware: str | None = None, max_steps: int = 50, max_wall_s: float = 3600.0,
                tasks_dir: Dirs = None, hardware_dir: Dirs = None) -> str:
    """The prompt ``env.reset()`` would return for `task`, built without a workspace or a sandbox.

    It is the env's own prompt (kernelgym/prompt.py, through the task's format) with the workspace path, which
    exists only once reset makes it, replaced by `WORKSPACE_PLACEHOLDER`. The reset seed does not enter the prompt.

    Args:
        task: task name or env id (a task.yaml task).
        hardware: the profile id the prompt is written for; None: this machine's, as ``gym.make`` detects it.
        max_steps, max_wall_s: the budgets the prompt states (pass the env's).
        tasks_dir, hardware_dir: as for `list_tasks`.

    Returns:
        The prompt text, already fitted to the observation space as the env fits it.

    Raises:
        UnknownTaskError: no such task. HardwareProfileError: unknown or undetectable profile.
        UnsupportedTaskError, TaskSpecError: the task cannot run on that profile.
    """
    from kernelgym.discovery import get_task
    from kernelgym.hardware import detect_profile, discover_profiles, hardware_search_path

    loaded = get_task(task, tasks_dir=tasks_dir)
    if hardware is None:
        profile = detect_profile(None)
    else:
        profiles = discover_profiles(hardware_search_path(hardware_dir)).profiles
        _wanted("hardware", hardware, profiles)
        profile = profiles[hardware]
    return _prompt_of(loaded, profile, max_steps, max_wall_s)


def _prompt_of(task: Task, profile: HardwareProfile, max_steps: int, max_wall_s: float) -> str:
    """`task_prompt` for a loaded task and profile (raises what the env raises for an unsupported pair)."""
    from kernelgym.spaces import to_observation_text
    from kernelgym.task_format import NATIVE

    NATIVE.require_supported(task, profile)
    text = NATIVE.build_prompt(task, profile, Path("/WORKSPACE"), max_steps, max_wall_s)
    return to_observation_text(text.replace("/WORKSPACE", WORKSPACE_PLACEHOLDER))


def task_dataset(language: Filter = None, kind: Filter = None, hardware: str | None = None, difficulty: Filter = None,
                 seeds: Iterable[int] = (0,), *, prompt: str = "task", system: str | None = None,
                 max_steps: int = 50, max_wall_s: float = 3600.0, tasks_dir: Dirs = None,
                 hardware_dir: Dirs = None):
    """A Hugging Face ``datasets.Dataset`` of task prompts, one row per task and seed: the training set of TRL's
    GRPOTrainer and verl.

    Columns: ``prompt`` (chat messages, a list of ``{"role", "content"}``), ``task`` (the task name, which
    `KernelArenaTRLEnv.reset(**row)` reads), ``env_id``, ``seed``, ``language``, ``kind``, ``difficulty`` ("" where
    task.yaml declares none), ``hardware`` (the profile the prompt is written for), ``max_steps``, ``max_wall_s``
    (the budgets the prompt states; the TRL env makes its env with them).

    Args:
        language, kind, difficulty: filters, as for `list_tasks`.
        hardware: the one profile id the rows are for: only tasks it can grade are kept and the prompts describe
            it. None: this machine's profile, as ``gym.make`` detects it (the CPU interpreter without a GPU).
        seeds: the reset seeds; each task gets one row per seed (the prompt does not depend on it).
        prompt: ``"task"``: the user message is the env's reset prompt (`task_prompt`), for trainers that feed the
            row's prompt to the model (verl, TRL without an env); ``"short"``: `SHORT_INSTRUCTION` only, for TRL's
            environment_factory, whose env appends the reset prompt itself.
        system: a system message put first, or None for none.
        max_steps, max_wall_s: the episode budgets the prompts state and the rows carry.
        tasks_dir, hardware_dir: as for `list_tasks`.

    Returns:
        A ``datasets.Dataset`` (empty where no task matches), rows sorted by env id, then seed.

    Raises:
        ImportError: the ``datasets`` package is missing; the message names the extra (``kernelgym[data]``).
        ValueError: a filter value is unknown, `prompt` is not one of the styles, or `hardware` is not one id.
        HardwareProfileError: hardware=None and this machine matches no profile.
    """
    try:
        from datasets import Dataset
    except ImportError as e:
        raise ImportError("kernelgym.task_dataset needs the `datasets` package: pip install 'kernelgym[data]' "
                          "(or pip install datasets)") from e
    from kernelgym.hardware import detect_profile, discover_profiles, hardware_search_path

    if prompt not in _PROMPT_STYLES:
        raise ValueError(f"task_dataset(prompt=...): unknown style {prompt!r}; valid values: "
                         f"{', '.join(_PROMPT_STYLES)}")
    if hardware is not None and not isinstance(hardware, str):
        raise ValueError("task_dataset(hardware=...): one profile id (the prompts describe one machine), "
                         f"got {hardware!r}")
    seeds = [int(s) for s in seeds]
    profile_id = hardware or detect_profile(None).id
    infos = list_tasks(language, kind, profile_id, difficulty, tasks_dir=tasks_dir, hardware_dir=hardware_dir)
    # Loaded once for all rows: discovering the search path per task would take seconds.
    tasks = discover_tasks(task_search_path(tasks_dir))
    profile = discover_profiles(hardware_search_path(hardware_dir)).profiles[profile_id]
    rows = []
    for t in infos:
        content = (_prompt_of(tasks[t.name], profile, max_steps, max_wall_s) if prompt == "task"
                   else SHORT_INSTRUCTION)
        messages = ([{"role": "system", "content": system}] if system is not None else []) + [
            {"role": "user", "content": content}]
        for seed in seeds:
            rows.append({"prompt": messages, "task": t.name, "env_id": t.env_id, "seed": seed,
                         "language": t.language, "kind": t.kind, "difficulty": t.difficulty or "",
                         "hardware": profile_id, "max_steps": max_steps, "max_wall_s": float(max_wall_s)})
    if not rows:
        return Dataset.from_dict({c: [] for c in ("prompt", "task", "env_id", "seed", "language", "kind",
                                                  "difficulty", "hardware", "max_steps", "max_wall_s")})
    return Dataset.from_list(rows)
