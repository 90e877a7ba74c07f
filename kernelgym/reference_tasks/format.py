"""The reference arena's folder format (config.yaml; docs/REFERENCE_TASKS.md) as a task format of `KernelArenaEnv`.

What differs from kernelgym's own format (kernelgym/task_format.py): the workspace is the task folder's own files
(the AKA-GENERATED block materialized), the prompt is the arena's (prompt.py), and the grader runs the folder's own
commands and reads their JSON reports (grader.py). The profile and bench actions need kernelgym's task data and answer
with an error observation here.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from kernelgym.discovery import Dirs
from kernelgym.grader import GraderConfig
from kernelgym.hardware import HardwareProfile
from kernelgym.reference_tasks.grader import ReferenceGrader, prepare_dir
from kernelgym.reference_tasks.prompt import build_reference_prompt
from kernelgym.reference_tasks.spec import ReferenceTask, find_reference_task
from kernelgym.reference_tasks.support import check_supported
from kernelgym.spaces import ActionError


class ReferenceFormat:
    """A reference-format task folder: the env's members of `kernelgym.task_format.TaskFormat`."""

    name = "reference"

    def owns(self, task: object) -> bool:
        return isinstance(task, ReferenceTask)

    def find(self, name: str, tasks_dir: Dirs = None) -> ReferenceTask | None:
        return find_reference_task(name, tasks_dir=tasks_dir)

    def require_supported(self, task: ReferenceTask, hardware: HardwareProfile) -> None:
        check_supported(task, hardware)

    def grader_config(self, config: GraderConfig) -> GraderConfig:
        # The folder's commands run only at grading: there is no warm worker to prepare anything ahead.
        return dataclasses.replace(config, warm_worker=False)

    def create_workspace(self, task: ReferenceTask, workspace: Path, hardware: HardwareProfile,
                         config: GraderConfig) -> Path:
        workspace.mkdir()
        prepare_dir(task, workspace)  # the agent runs the commands with the helpers the grader uses
        return workspace

    def make_grader(self, task: ReferenceTask, hardware: HardwareProfile, work_dir: Path, config: GraderConfig,
                    cap_bytes: int) -> ReferenceGrader:
        return ReferenceGrader(task, hardware, work_dir, config, cap_bytes=cap_bytes)

    def sandbox_env(self, task: ReferenceTask, hardware: HardwareProfile) -> dict[str, str]:
        return ReferenceGrader.sandbox_env(hardware)

    def build_prompt(self, task: ReferenceTask, hardware: HardwareProfile, workspace: Path, max_steps: int,
                     max_wall_s: float) -> str:
        return build_reference_prompt(task, hardware, workspace, max_steps, max_wall_s)

    def check_action(self, task: ReferenceTask, kind: str) -> None:
        if kind in ("profile", "bench"):
            raise ActionError(f"the {kind} action needs a kernelgym task; here run the task's own commands, e.g. "
                              f"{task.spec.performance_command[0]!r}")


REFERENCE = ReferenceFormat()
