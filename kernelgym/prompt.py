"""The task prompt given at reset, in the eight parts of AgentKernelArena (arXiv:2605.16819): role, files and
target functions, architecture pre-check, task guidance, completion rules, hardware and language
reference, workspace path, iteration instruction; plus the actions this env accepts."""
from __future__ import annotations

from pathlib import Path

from kernelgym.backends import get_backend
from kernelgym.hardware import HardwareProfile
from kernelgym.task import Task

ROLES = {
    "triton2triton": "You are an expert GPU kernel engineer who writes fast, correct Triton kernels.",
    "torch2triton": "You are an expert GPU kernel engineer who replaces PyTorch code with fast Triton kernels.",
    "hip2hip": "You are an expert GPU kernel engineer who writes fast, correct HIP kernels.",
    "torch2hip": "You are an expert GPU kernel engineer who replaces PyTorch modules with HIP kernels.",
    "cuda2cuda": "You are an expert GPU kernel engineer who writes fast, correct CUDA kernels.",
    "torch2cuda": "You are an expert GPU kernel engineer who replaces PyTorch modules with CUDA kernels.",
}


def describe_outputs(task: Task) -> str:
    """One line per output: its name, where it comes from (returned, or written in place into an argument), its
    dtype and how it is compared."""
    lines = []
    for o in task.spec.outputs:
        where = "returned" if o.arg is None else f"written in place into argument {o.arg}"
        dtype = "the config's dtype" if o.dtype == "config" else o.dtype
        rule = {"tolerance": "within the tolerance for its dtype", "exact": "exactly",
                "set": "as sets along the last dimension (any order)"}[o.rule_for({"dtype": o.dtype})]
        lines.append(f"- `{o.name}`: {where}, {dtype}, compared {rule}")
    returned = [o.name for o in task.spec.outputs if o.arg is None]
    head = (f"The entry point returns {'a tuple (' + ', '.join(returned) + ')' if len(returned) > 1 else 'one tensor'}"
            if returned else "The entry point returns nothing that is graded")
    return f"{head}. Outputs:\n" + "\n".join(lines)

ACTIONS = """\
Actions (one per step, as JSON):
  {"kind": "shell", "cmd": "python check.py"}           run a shell command in the workspace (no network)
  {"kind": "read_file", "path": "kernel.py"}              read a file
  {"kind": "write_file", "path": "kernel.py", "content": "..."}   replace a file's contents
  {"kind": "edit_file", "path": "kernel.py", "old": "...", "new": "..."}   replace one exact occurrence
  {"kind": "profile", "config": 0}                        profile the kernel on seen config 0 (device times, counters)
  {"kind": "bench"}                                       what the grader would reward (advisory): per-config speedup
                                                          over the original kernel, timed as the grader times (GPU),
                                                          or a labelled bytes-moved model (CPU interpreter); same as
                                                          `python bench.py`
  {"kind": "submit"}                                      end the episode and be graded"""


def build_prompt(task: Task, hardware: HardwareProfile, workspace: Path, max_steps: int, max_wall_s: float) -> str:
    """The whole prompt as one string (Markdown)."""
    spec = task.spec
    timing = ("Timing: NOT measured (CPU Triton interpreter; the score has no speedup term)." if hardware.interpreter
              else f"Timing: device time on {hardware.name} (interquartile mean of the timed runs, interleaved "
                   "with the baseline's, caches flushed before every run).")
    parts = [
        f"# Task {task.env_id}\n\n{ROLES.get(spec.kind, ROLES['triton2triton'])}",
        f"## Files\nEditable (only these are graded): {', '.join(spec.editable_files)}.\n"
        f"Entry point: `{spec.entry_point}`. Target kernel functions: {', '.join(spec.target_functions) or '-'}.\n"
        f"{describe_outputs(task)}\n"
        f"Reference (read-only, for understanding): `{spec.reference}`. `configs.json` lists the seen configs and "
        f"tolerances; `python check.py` checks your kernel on them.",
        f"## Task\n{spec.description}\n\n{spec.guidance}".rstrip(),
        "## Architecture pre-check\nDo not hard-code a GPU architecture or target flags; the kernel must run on "
        f"the grading hardware ({hardware.name}, {hardware.arch}).",
        "## Completion rules\n"
        "- Grading is gated: +20 if it compiles, +100 if every config is correct within tolerance, then "
        "+100 x speedup over the baseline.\n"
        "- The grader runs your kernel itself, in a fresh process, on fresh inputs, and later on input shapes "
        "you have not seen: no hard-coded shapes, no caching of outputs, no fallback to PyTorch.\n"
        "- Never write score or report files yourself; they are ignored.\n"
        f"- You have {max_steps} steps and {max_wall_s:.0f} s; the episode is graded when you submit or either "
        f"runs out.\n- {timing}",
        f"## Language\n{get_backend(spec.language).PROMPT}",
        f"## Hardware: {hardware.name} ({hardware.arch})\nTriton launch options accepted here: "
        f"{', '.join(hardware.triton_launch_options)}.\n\n{hardware.reference_doc().strip()}",
        f"## Workspace\n{workspace}",
        f"## How to work\n{ACTIONS}\n\nIterate: edit, run `python check.py`, keep what is correct"
        + (" (nothing can be timed on the interpreter; `bench` estimates from the bytes your kernels move, a model)"
           if hardware.interpreter else " and faster by `bench` (check.py's times are not timed the grader's way)")
        + ", then submit your best version.",
    ]
    return "\n\n".join(parts) + "\n"
