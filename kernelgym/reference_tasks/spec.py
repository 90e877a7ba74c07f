"""The reference arena's task format (AgentKernelArena; docs/REFERENCE_TASKS.md): a folder holding ``config.yaml``
with the files to optimize, the target kernel functions, and the shell commands that compile, check and time them.

`load_reference_task` validates one folder; `discover_reference_tasks` finds every such folder under the user's task
folders. A folder is a reference task when it holds ``config.yaml`` and no ``task.yaml`` (a kernelgym task) and its
config names at least one of the format's own keys (so a policy's config.yaml elsewhere is not mistaken for one).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kernelgym.discovery import EPISODE_RECORD, Dirs, TaskProblem, as_dirs, env_dirs, TASKS_PATH_ENV
from kernelgym.errors import TaskSpecError
from kernelgym.task import inside, read_task_file, spec_error, task_tree_problems

CONFIG = "config.yaml"
#: Keys that only the reference format uses: a config.yaml with none of them is not a reference task.
FORMAT_KEYS = ("source_file_path", "compile_command", "correctness_command", "performance_command", "task_type")
#: What the format's stages write (relative to the task folder); stale copies are removed before each stage.
COMPILE_REPORT = "build/compile_report.json"
CORRECTNESS_REPORT = "build/correctness_report.json"
PERFORMANCE_REPORT = "build/performance_report.json"
#: Where ROCmBench-style pytest files write their timings instead.
ROCMBENCH_REPORT = "perf/benchmark_results.json"
#: Folders a task run writes into; never copied into a workspace or a grading directory.
OUTPUT_DIRS = ("build", "perf", "__pycache__", ".pytest_cache")
DEFAULT_TIMEOUT_S = 3600.0


class PromptSpec(BaseModel):
    """``prompt``: text for the agent; a null field means the default."""

    model_config = ConfigDict(extra="allow")
    source_code: str | None = None
    instructions: str | None = None
    cheatsheet: str | None = None


class PlatformSupport(BaseModel):
    """``platform_support``: where the task can run."""

    model_config = ConfigDict(extra="allow")
    required_arch: str | list[str] | None = None
    """GPU architecture(s) the task needs (``gfx942``); the device's arch must start with one of them."""
    status: Literal["active", "skip"] = "active"
    """``skip``: the task is listed but never run."""
    skip_reason: str | None = None


class ReferenceTaskSpec(BaseModel):
    """The fields of a reference task's ``config.yaml`` that kernelgym reads (others are kept and ignored)."""

    model_config = ConfigDict(extra="allow")
    source_file_path: list[str] = Field(min_length=1)
    """The files the agent edits, relative to the task folder; only these are taken from the workspace."""
    target_kernel_functions: list[str] = Field(default_factory=list)
    compile_command: list[str] = Field(min_length=1)
    """Shell commands run in the task folder; a leading ``python3``/``python``/``pytest`` means kernelgym's Python."""
    correctness_command: list[str] = Field(min_length=1)
    performance_command: list[str] = Field(min_length=1)
    task_type: str = Field(pattern=r"^[A-Za-z0-9_]+$")
    """triton2triton, hip2hip, torch2hip, ..."""
    compile_timeout: float = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    correctness_timeout: float = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    performance_timeout: float = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    """Seconds for all of a stage's commands together."""
    prompt: PromptSpec | None = None
    platform_support: PlatformSupport | None = None

    @field_validator("source_file_path")
    @classmethod
    def _relative(cls, files: list[str]) -> list[str]:
        # Normalized here: the grader matches these against the folder's walk (``source/x.py``), so ``./source/x.py``
        # or ``source//x.py`` would otherwise name the file twice.
        out = []
        for f in files:
            norm = os.path.normpath(f)
            if Path(f).is_absolute() or ".." in Path(norm).parts or norm == ".":
                raise ValueError(f"source file {f!r} must be a relative path to a file inside the task folder")
            out.append(norm)
        return out

    @field_validator("compile_command", "correctness_command", "performance_command")
    @classmethod
    def _commands(cls, commands: list[str]) -> list[str]:
        for c in commands:
            if not c.strip():
                raise ValueError("a command is empty; expected a shell command such as "
                                 "'python3 scripts/task_runner.py compile'")
        return commands


class ReferenceTask:
    """A loaded reference-format task folder.

    Attributes:
        spec: the validated `ReferenceTaskSpec`.
        root: the task folder (pristine; never handed to the agent).
        name: ``<task_type>-<folder name>``, lower case, e.g. ``triton2triton-vllm_silu_and_mul``.
        env_id: ``KernelArena/<name>-v0``.
    """

    def __init__(self, spec: ReferenceTaskSpec, root: Path):
        self.spec, self.root = spec, root
        self.name = task_name(spec.task_type, root)
        self.env_id = f"KernelArena/{self.name}-v0"

    def files(self) -> list[Path]:
        """The folder's files (relative), outputs of earlier runs (`OUTPUT_DIRS`) left out, and so are links leaving
        the folder and anything but regular files (`load_reference_task` refuses them)."""
        out = []
        for here, dirs, names in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if d not in OUTPUT_DIRS)
            out += [Path(here, n).relative_to(self.root) for n in sorted(names)
                    if not n.endswith(".pyc") and inside(self.root, Path(here, n)) and Path(here, n).is_file()]
        return out

    def __repr__(self) -> str:
        return f"ReferenceTask({self.env_id!r}, root={str(self.root)!r})"


def task_name(task_type: str, root: Path) -> str:
    """``<task_type>-<folder name>``, lower case, with characters other than letters, digits, ``_`` and ``-`` as ``-``."""
    return re.sub(r"[^a-z0-9_-]+", "-", f"{task_type}-{root.name}".lower())


def _read_config(root: Path) -> Any:
    path = root / CONFIG
    try:
        return yaml.safe_load(read_task_file(root, CONFIG))
    except yaml.YAMLError as e:
        raise TaskSpecError(f"{path}: not valid YAML: {e}") from None


def is_reference_task_dir(folder: str | Path) -> bool:
    """True when `folder` holds config.yaml and no task.yaml (it is graded as a reference task, or fails to load)."""
    folder = Path(folder)
    return (folder / CONFIG).is_file() and not (folder / "task.yaml").is_file()


def _looks_like_task(folder: Path) -> bool:
    """config.yaml there names one of the format's keys (a broken YAML counts: it is reported, not skipped)."""
    try:
        raw = yaml.safe_load(read_task_file(folder, CONFIG))
    except (OSError, ValueError, yaml.YAMLError, TaskSpecError):
        return True
    return isinstance(raw, dict) and any(k in raw for k in FORMAT_KEYS)


def load_reference_task(task_dir: str | Path) -> ReferenceTask:
    """Load and validate ``task_dir/config.yaml``.

    Raises:
        TaskSpecError: the file is missing or not YAML, a field is missing or has the wrong type, or a source file
            it names does not exist; or the folder holds a symlink leaving it or a special file
            (`kernelgym.task.task_tree_problems`); one line per problem, each naming the file and the field.
    """
    root = Path(task_dir).resolve()
    path = root / CONFIG
    if not path.is_file():
        raise TaskSpecError(f"{path}: not found; a reference-format task folder must hold config.yaml")
    problems = task_tree_problems(root, skip=OUTPUT_DIRS)
    if problems:
        raise TaskSpecError("\n".join(f"{root}: {p}" for p in problems))
    raw = _read_config(root)
    if not isinstance(raw, dict):
        raise TaskSpecError(f"{path}: expected a mapping of fields, found {type(raw).__name__}")
    try:
        spec = ReferenceTaskSpec.model_validate(raw)
    except ValidationError as e:
        raise spec_error(path, e) from None
    missing = [f for f in spec.source_file_path if not (root / f).is_file()]
    if missing:
        raise TaskSpecError(f"{path}: field `source_file_path`: {', '.join(repr(f) for f in missing)} not found in "
                            f"{root}")
    return ReferenceTask(spec, root)


def reference_search_path(tasks_dir: Dirs = None) -> list[Path]:
    """Where reference tasks are looked for: ``$KERNELGYM_TASKS_PATH`` and `tasks_dir` (the built-in root holds none)."""
    return [*env_dirs(TASKS_PATH_ENV), *as_dirs(tasks_dir)]


def _task_folders(root: Path) -> list[Path]:
    found = []
    for here, subdirs, files in os.walk(root):
        folder = Path(here)
        if EPISODE_RECORD in files:
            subdirs[:] = []  # an episode's folder: its workspace is the agent's (discovery.EPISODE_RECORD)
        elif "task.yaml" in files:
            subdirs[:] = []  # a kernelgym task: discovery.py's
        elif CONFIG in files and _looks_like_task(folder):
            found.append(folder)
            subdirs[:] = []
        else:
            subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in OUTPUT_DIRS)
    return sorted(found)


def discover_reference_tasks(roots: Dirs = None) -> tuple[dict[str, ReferenceTask], list[TaskProblem]]:
    """Every reference task under `roots` (None: `reference_search_path()`), by name, and the folders that failed.

    Returns:
        (tasks, problems): a broken config.yaml, or a second folder with a name already taken, is a `TaskProblem`;
        a search folder that does not exist is left to kernelgym's own discovery to report.
    """
    tasks: dict[str, ReferenceTask] = {}
    problems: list[TaskProblem] = []
    for root in (reference_search_path() if roots is None else as_dirs(roots)):
        root = Path(root).expanduser().resolve()
        if not root.is_dir():
            continue
        for folder in _task_folders(root):
            if any(t.root == folder for t in tasks.values()):
                continue
            try:
                task = load_reference_task(folder)
            except (TaskSpecError, OSError, ValueError) as e:
                raw = _raw_type(folder)
                problems.append(TaskProblem(folder / CONFIG, str(e), task_name(raw, folder) if raw else None))
                continue
            if task.name in tasks:
                problems.append(TaskProblem(folder / CONFIG, f"{folder / CONFIG}: task name {task.name!r} is already "
                                            f"taken by {tasks[task.name].root}; rename one folder", task.name,
                                            kind="duplicate"))
                continue
            tasks[task.name] = task
    return tasks, problems


def _raw_type(folder: Path) -> str | None:
    try:
        raw = yaml.safe_load(read_task_file(folder, CONFIG))
    except (OSError, ValueError, yaml.YAMLError, TaskSpecError):
        return None
    value = raw.get("task_type") if isinstance(raw, dict) else None
    return value if isinstance(value, str) else None


def find_reference_task(name: str, tasks_dir: Dirs = None) -> ReferenceTask | None:
    """The reference task `name` (a folder, a name ``triton2triton-foo`` or an env id), or None where `name` is none.

    Raises:
        TaskSpecError: `name` is a reference task folder, or the name of one, whose config.yaml is broken.
    """
    if Path(name).is_dir() and is_reference_task_dir(name):
        return load_reference_task(name)
    key = name.removeprefix("KernelArena/")
    key = re.sub(r"-v0$", "", key)
    tasks, problems = discover_reference_tasks(reference_search_path(tasks_dir))
    for p in problems:  # a second folder of that name is refused, not silently shadowed (as kernelgym's own tasks)
        if p.name == key and p.kind == "duplicate":
            raise TaskSpecError(p.message)
    if key in tasks:
        return tasks[key]
    for p in problems:
        if p.name == key:
            raise TaskSpecError(f"Task {name!r} cannot be loaded: {p.message}")
    return None
