"""The prompt of a reference-format task (docs/REFERENCE_TASKS.md): the arena's sections, in the arena's order."""
from __future__ import annotations

from pathlib import Path

from kernelgym.hardware import HardwareProfile
from kernelgym.prompt import ROLES
from kernelgym.reference_tasks.spec import ReferenceTask

ACTIONS = """\
Actions (one per step, as JSON):
  {"kind": "shell", "cmd": "python3 scripts/task_runner.py correctness"}   run a shell command here (no network)
  {"kind": "read_file", "path": "source/kernel.py"}                        read a file
  {"kind": "write_file", "path": "source/kernel.py", "content": "..."}     replace a file's contents
  {"kind": "edit_file", "path": "source/kernel.py", "old": "...", "new": "..."}   replace one exact occurrence
  {"kind": "submit"}                                                       end the episode and be graded"""


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
