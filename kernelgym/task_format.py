"""Task formats: how the one env, `KernelArenaEnv`, turns a task into a workspace, a grader and a prompt.

Two formats exist: kernelgym's own (a folder with task.yaml, docs/TASKS.md; `NativeFormat` here) and the reference
arena's (a folder with config.yaml, docs/REFERENCE_TASKS.md; kernelgym/reference_tasks/format.py). The env asks
`format_of(task)` which one owns a loaded task, and `resolve_task` loads a name, env id or folder in whichever format
holds it. Adding a format is one module with the members of `TaskFormat`, named in `task_formats`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kernelgym.discovery import Dirs, get_task
from kernelgym.errors import UnknownTaskError
from kernelgym.grader import Grade, Grader, GraderConfig
from kernelgym.hardware import HardwareProfile
from kernelgym.task import Task


@runtime_checkable
class EpisodeGrader(Protocol):
    """What the env asks of a format's grader during an episode.

    A grader that runs nothing in the background (the reference format's) implements the five worker methods as
    doing nothing.
    """

    def spawn(self) -> None:
        """Start the first grading's processes before its seed is drawn (the env calls it for the next episode while
        the one before is graded), if the grader has any."""

    def start_worker(self, seed: int | None = None, hold_observer: bool = False) -> None:
        """Start preparing the grading with `seed` while the agent works (the warm worker), if the grader has one.
        `hold_observer`: background work that no candidate code may overlap waits for `release_observer` (the env
        prepares the next episode's grading while the current one's candidate runs)."""

    def release_observer(self) -> None:
        """Start the background work that `start_worker(seed, hold_observer=True)` held back, if any."""

    def stop_worker(self) -> None:
        """Stop whatever `start_worker` started; safe to call when nothing runs."""

    def wait_for_baseline(self) -> None:
        """Block until background work that an agent's command must not overlap (the baseline's observation) is done."""

    def grade(self, workspace: Path, seed: int) -> Grade:
        """Grade the editable files in `workspace`; never raises for a bad kernel (failures are stages)."""


@runtime_checkable
class TaskFormat(Protocol):
    """One task format: every member the env calls; nothing else of a format is looked at.

    Attributes:
        name: recorded as ``format`` in each episode's episode.json (``native``, ``reference``).
    """

    name: str

    def owns(self, task: object) -> bool:
        """Whether `task` is a loaded task of this format."""

    def find(self, name: str, tasks_dir: Dirs = None) -> Any | None:
        """The task `name` (a folder, a name or an env id) of this format, or None where this format has none.

        Raises:
            TaskSpecError: the task's folder was found but is broken.
            UnknownTaskError: may be raised instead of returning None, with hints (close matches).
        """

    def require_supported(self, task: Any, hardware: HardwareProfile) -> None:
        """Refuse, with the reason, a task that cannot run on `hardware` (a `KernelGymError` subclass)."""

    def grader_config(self, config: GraderConfig) -> GraderConfig:
        """The env's grader configuration as this format's grader takes it."""

    def create_workspace(self, task: Any, workspace: Path, hardware: HardwareProfile,
                         config: GraderConfig) -> Path:
        """Fill the new directory `workspace` with what the agent works on; returns it."""

    def make_grader(self, task: Any, hardware: HardwareProfile, work_dir: Path, config: GraderConfig,
                    cap_bytes: int) -> EpisodeGrader:
        """The episode's grader; its grading directories go under `work_dir`, each capped at `cap_bytes` bytes."""

    def sandbox_env(self, task: Any, hardware: HardwareProfile) -> dict[str, str]:
        """Environment variables the agent's shell commands get (e.g. the interpreter switch)."""

    def build_prompt(self, task: Any, hardware: HardwareProfile, workspace: Path, max_steps: int,
                     max_wall_s: float) -> str:
        """The task prompt (Markdown) the reset observation carries."""

    def check_action(self, task: Any, kind: str) -> None:
        """Refuse an action kind this format cannot serve.

        Raises:
            ActionError: `kind` is not served; the message names what to do instead.
        """


class NativeFormat:
    """kernelgym's own task format: task.yaml, the reference module, configs; graded by `kernelgym.grader.Grader`."""

    name = "native"

    def owns(self, task: object) -> bool:
        return isinstance(task, Task)

    def find(self, name: str, tasks_dir: Dirs = None) -> Task:
        return get_task(name, tasks_dir=tasks_dir)

    def require_supported(self, task: Task, hardware: HardwareProfile) -> None:
        task.require_supported(hardware)

    def grader_config(self, config: GraderConfig) -> GraderConfig:
        return config

    def create_workspace(self, task: Task, workspace: Path, hardware: HardwareProfile,
                         config: GraderConfig) -> Path:
        from kernelgym.estimate import install_bench
        from kernelgym.workspace import create_workspace

        created = create_workspace(task, workspace, hardware)
        install_bench(task, created, hardware, config)  # bench.py and what it reads
        return created

    def make_grader(self, task: Task, hardware: HardwareProfile, work_dir: Path, config: GraderConfig,
                    cap_bytes: int) -> Grader:
        # The byte cap is the workspace's own: only the editable files reach a grading directory, each one capped
        # when the workspace holds it.
        return Grader(task, hardware, work_dir, config)

    def sandbox_env(self, task: Task, hardware: HardwareProfile) -> dict[str, str]:
        from kernelgym.backends import get_backend

        return dict(get_backend(task.spec.language).INTERPRETER_ENV) if hardware.interpreter else {}

    def build_prompt(self, task: Task, hardware: HardwareProfile, workspace: Path, max_steps: int,
                     max_wall_s: float) -> str:
        from kernelgym.prompt import build_prompt

        return build_prompt(task, hardware, workspace, max_steps, max_wall_s)

    def check_action(self, task: Task, kind: str) -> None:
        return None


NATIVE = NativeFormat()


def task_formats() -> tuple[TaskFormat, ...]:
    """The task formats, in the order a name is looked up: kernelgym's own first, then the reference arena's."""
    from kernelgym.reference_tasks.format import REFERENCE

    return (NATIVE, REFERENCE)


def format_of(task: object) -> TaskFormat:
    """The format that owns a loaded task.

    Raises:
        TypeError: `task` is no format's task (neither a `Task` nor a `ReferenceTask`).
    """
    for fmt in task_formats():
        if fmt.owns(task):
            return fmt
    raise TypeError(f"task must be a task name, env id, folder, kernelgym.Task or ReferenceTask; got "
                    f"{type(task).__name__}")


def resolve_task(task: str | os.PathLike | object, tasks_dir: Dirs = None) -> object:
    """A loaded task: `task` itself when one, else the task of that name, env id or folder in any format.

    Raises:
        TaskSpecError: the task's folder was found but is broken.
        UnknownTaskError: no format has such a task; the message is the native format's (close matches).
        TypeError: `task` is neither a name nor a loaded task.
    """
    if not isinstance(task, (str, os.PathLike)):
        format_of(task)
        return task
    unknown: UnknownTaskError | None = None
    for fmt in task_formats():
        try:
            found = fmt.find(os.fspath(task), tasks_dir)
        except UnknownTaskError as e:
            unknown = unknown or e
            continue
        if found is not None:
            return found
    raise unknown or UnknownTaskError(f"Unknown task {os.fspath(task)!r}; `kernelgym list` shows the tasks")
