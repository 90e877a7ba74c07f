"""`ReferenceTaskEnv`: a reference-format task folder (docs/REFERENCE_TASKS.md) as a kernelgym env.

The episode, actions, observations, budgets, sandbox and logging are `KernelArenaEnv`'s; what differs is the
workspace (the task folder's own files, AKA-GENERATED block materialized), the prompt, and the grader (the folder's
own commands and JSON reports: grader.py). The profile and bench actions need kernelgym's task data and answer with
an error observation here.
"""
from __future__ import annotations

import dataclasses
import json
import time
import uuid
from pathlib import Path
from typing import Any

from kernelgym.env import DEFAULT_WORKSPACE_CAP_FILES, KernelArenaEnv, check_env_args
from kernelgym.errors import UnknownTaskError
from kernelgym.grader import GraderConfig
from kernelgym.hardware import HardwareProfile, detect_profile
from kernelgym.prompt import ROLES
from kernelgym.reference_tasks.grader import ReferenceGrader, prepare_dir
from kernelgym.reference_tasks.spec import ReferenceTask, find_reference_task
from kernelgym.reference_tasks.support import check_supported
from kernelgym.sandbox import make_sandbox
from kernelgym.spaces import ActionError, to_observation_text

ACTIONS = """\
Actions (one per step, as JSON):
  {"kind": "shell", "cmd": "python3 scripts/task_runner.py correctness"}   run a shell command here (no network)
  {"kind": "read_file", "path": "source/kernel.py"}                        read a file
  {"kind": "write_file", "path": "source/kernel.py", "content": "..."}     replace a file's contents
  {"kind": "edit_file", "path": "source/kernel.py", "old": "...", "new": "..."}   replace one exact occurrence
  {"kind": "submit"}                                                       end the episode and be graded"""


class ReferenceTaskEnv(KernelArenaEnv):
    """Optimize the kernel of a reference-format task folder; the episode ends with the gated arena score.

    ## Description
    Each episode gets a fresh copy of the task folder in its own directory under `run_dir`; the agent edits the
    `source_file_path` files and may run the task's commands itself. Shell commands run under bubblewrap.

    ## Spaces
    As `KernelArenaEnv` (profile and bench answer with an error: they need a kernelgym task).

    ## Rewards (Score)
    0 on every step but the last. On the last: the task's compile commands (+20), then its correctness commands
    (+100), then its performance commands (+100 x speedup: the arithmetic mean over cases, matched by `params`, of
    baseline time / candidate time, the baseline being the original sources). On the CPU interpreter nothing is
    timed and there is no speedup term.

    ## Episode end
    As `KernelArenaEnv`.

    ## Arguments
    task: a `ReferenceTask`, its folder, its name or env id (found under `tasks_dir` and $KERNELGYM_TASKS_PATH).
    The others as `KernelArenaEnv`.

    Raises:
        UnsupportedTaskError: the task cannot run on this hardware (AMD-only, or marked skip); the reason is said.
        UnknownTaskError: no reference task of that name.

    ## Version History
    v0: initial version.
    """

    def __init__(self, task: str | ReferenceTask, *, run_dir: str | Path | None = None,
                 hardware: str | HardwareProfile | None = None, sandbox: str = "bwrap", max_steps: int = 50,
                 max_wall_s: float = 3600.0, command_timeout_s: float = 300.0,
                 grader: GraderConfig | None = None, render_mode: str | None = None,
                 tasks_dir: str | Path | list[str | Path] | None = None, workspace_cap_bytes: int = 4 << 30,
                 workspace_cap_files: int = DEFAULT_WORKSPACE_CAP_FILES):
        check_env_args(render_mode, max_steps)
        found = task if isinstance(task, ReferenceTask) else find_reference_task(str(task), tasks_dir=tasks_dir)
        if found is None:
            raise UnknownTaskError(f"Unknown reference-format task {task!r}: no folder holding config.yaml of that "
                                   f"name under --tasks-dir / $KERNELGYM_TASKS_PATH; `kernelgym list --tasks-dir DIR` "
                                   f"shows them.")
        self.task = found
        self.hardware = hardware if isinstance(hardware, HardwareProfile) else detect_profile(hardware)
        check_supported(self.task, self.hardware)
        self._set_up(run_dir, sandbox, max_steps, max_wall_s, command_timeout_s, render_mode, workspace_cap_bytes,
                     dataclasses.replace(grader or GraderConfig(), sandbox=sandbox, warm_worker=False),
                     workspace_cap_files=workspace_cap_files)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super(KernelArenaEnv, self).reset(seed=seed)
        self.episode_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
        self.episode_dir = self.run_dir / "episodes" / self.episode_id
        self.episode_dir.mkdir(parents=True, mode=0o700)
        self.episode_dir.chmod(0o700)
        self.workspace = self.episode_dir / "workspace"
        self.workspace.mkdir()
        prepare_dir(self.task, self.workspace)  # the agent runs the commands with the helpers the grader uses
        (self.episode_dir / "episode.json").write_text(json.dumps(
            {"task": self.task.name, "task_dir": str(self.task.root), "env_id": self.task.env_id,
             "hardware": self.hardware.id, "episode_id": self.episode_id, "seed": seed, "format": "reference"}))
        env = {"TRITON_INTERPRET": "1"} if self.hardware.interpreter else {}
        self.sandbox = make_sandbox(self.sandbox_kind, self.workspace, gpu=not self.hardware.interpreter, env=env,
                                    limits=self.command_limits)
        self.grader = ReferenceGrader(self.task, self.hardware, self.episode_dir / "grading", self.grader_config,
                                      cap_bytes=self.workspace_cap_bytes)
        self._grading_seed = int(self.np_random.integers(0, 2**31 - 1))
        self.steps, self.start_time, self._done, self.grade = 0, time.monotonic(), False, None
        self._last_output = ""
        prompt = build_reference_prompt(self.task, self.hardware, self.workspace, self.max_steps, self.max_wall_s)
        return ({"output": "", "prompt": to_observation_text(prompt)},
                self._info(kind="reset", error="", grade=None))

    def close(self):
        super(KernelArenaEnv, self).close()

    def _execute_action(self, act) -> str:
        # Shell and submit here, not in KernelArenaEnv's: nothing of this grader runs in the background that a
        # command would have to wait for. File actions are KernelArenaEnv's (its workspace path checks).
        if act.kind == "shell":
            return self.sandbox.run(act.cmd).describe()
        if act.kind == "submit":
            return "submitted"
        if act.kind in ("profile", "bench"):
            raise ActionError(f"the {act.kind} action needs a kernelgym task; here run the task's own commands, e.g. "
                              f"{self.task.spec.performance_command[0]!r}")
        return super()._execute_action(act)


def build_reference_prompt(task: ReferenceTask, hardware: HardwareProfile, workspace: Path, max_steps: int,
                           max_wall_s: float) -> str:
    """The prompt (Markdown): role, files and target functions, the task's instructions, completion rules, hardware,
    workspace and actions, in the arena's order."""
    spec, p = task.spec, task.spec.prompt
    timing = ("Timing: NOT measured (CPU Triton interpreter; the score has no speedup term)." if hardware.interpreter
              else f"Timing: the task's performance command on {hardware.name}, with kernelgym's timing helpers in "
                   f"the AKA-GENERATED block; the original sources are timed the same way, in alternating rounds.")
    commands = "\n".join(f"- {stage}: " + "; ".join(f"`{c}`" for c in cmds) for stage, cmds in
                         (("compile", spec.compile_command), ("correctness", spec.correctness_command),
                          ("performance", spec.performance_command)))
    parts = [
        f"# Task {task.env_id}\n\n{ROLES.get(spec.task_type, ROLES['triton2triton'])}",
        f"## Files\nEditable (only these are graded): {', '.join(spec.source_file_path)}.\n"
        f"Target kernel functions: {', '.join(spec.target_kernel_functions) or '-'}.",
        "## Task\n" + ((p.instructions if p and p.instructions else None) or
                       "Make the target kernels faster while keeping them correct."),
        *([f"## Source\n{p.source_code}"] if p and p.source_code else []),
        *([f"## Cheatsheet\n{p.cheatsheet}"] if p and p.cheatsheet else []),
        "## Architecture pre-check\nDo not hard-code a GPU architecture or target flags; the kernel must run on "
        f"the grading hardware ({hardware.name}, {hardware.arch}).",
        "## Completion rules\n- Grading is gated, by the task's own commands, run in a fresh copy of this folder "
        f"with only your editable files taken from here:\n{commands}\n"
        "- +20 if the compile commands pass, +100 if the correctness commands pass, then +100 x speedup over the "
        "original sources.\n- Never write score or report files yourself; the grader runs the commands again.\n"
        f"- You have {max_steps} steps and {max_wall_s:.0f} s.\n- {timing}",
        f"## Hardware: {hardware.name} ({hardware.arch})\n{hardware.reference_doc().strip()}",
        f"## Workspace\n{workspace}",
        f"## How to work\n{ACTIONS}\n\nIterate: edit, run the correctness command, keep what is correct"
        + ("" if hardware.interpreter else " and faster by the performance command") + ", then submit.",
    ]
    return "\n\n".join(parts) + "\n"
