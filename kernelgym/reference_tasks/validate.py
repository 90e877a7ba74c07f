"""``kernelgym validate DIR`` for a reference-format task folder: each check named, passed / failed / not run.

1. ``config.yaml loads``: the fields are there with the right types, the source files exist.
2. ``commands``: each command parses as a shell line, starts with python3/python/pytest or a program that exists,
   and the files it names (``scripts/task_runner.py``, the pytest file) are in the folder.
3. ``benchmark helpers``: every AKA-GENERATED block is well formed, and a file that calls the helpers has one (or
   defines them).
4. ``target functions``: each of `target_kernel_functions` is defined in a source file.
5. ``hardware``: the task can run on this hardware (platform_support, AMD-only features).
6. ``baseline passes its own commands``: the original sources, graded as a submission in the sandbox, pass the
   compile and correctness commands.
"""
from __future__ import annotations

import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from kernelgym.checks import Check
from kernelgym.errors import KernelGymError
from kernelgym.grader import GraderConfig
from kernelgym.hardware import HardwareProfile, detect_profile
from kernelgym.reference_tasks.placeholder import BEGIN, END, HELPER_NAMES, PlaceholderError, find_block
from kernelgym.reference_tasks.spec import ReferenceTask, load_reference_task
from kernelgym.reference_tasks.support import unsupported_reason

PROGRAMS = ("python3", "python", "pytest")


def check_commands(task: ReferenceTask) -> Check:
    """Each command parses, starts with a known program, and names only files that exist in the folder."""
    problems = []
    for stage in ("compile_command", "correctness_command", "performance_command"):
        for cmd in getattr(task.spec, stage):
            try:
                words = shlex.split(cmd)
            except ValueError as e:
                problems.append(f"{stage}: {cmd!r} does not parse as a shell command ({e})")
                continue
            if not words:
                problems.append(f"{stage}: {cmd!r} is empty")
                continue
            program = words[0]
            if program not in PROGRAMS and not (task.root / program).is_file() and shutil.which(program) is None:
                problems.append(f"{stage}: {cmd!r} starts with {program!r}, which is neither python3/python/pytest, "
                                f"a file in the task folder, nor a program on PATH")
            if program in ("python3", "python") and len(words) > 1 and words[1] in ("-c", "-m"):
                continue
            for word in words[1:]:
                if re.fullmatch(r"[\w./-]+\.py", word) and not (task.root / word).is_file():
                    problems.append(f"{stage}: {cmd!r} names {word}, which is not in {task.root}")
    if problems:
        return Check("commands", False, "\n".join(problems))
    n = sum(len(getattr(task.spec, s)) for s in ("compile_command", "correctness_command", "performance_command"))
    return Check("commands", True, f"{n} commands parse; the files they name exist")


def check_helpers(task: ReferenceTask) -> Check:
    """Every AKA-GENERATED block is well formed; a file calling the helpers has one or defines them."""
    problems, blocks = [], 0
    for rel in task.files():
        if rel.suffix != ".py":
            continue
        text = (task.root / rel).read_text(errors="replace")
        try:
            block = find_block(text, str(rel))
        except PlaceholderError as e:
            problems.append(str(e))
            continue
        blocks += block is not None
        calls = [n for n in HELPER_NAMES if re.search(rf"\b{n}\s*\(", text)]
        defines = [n for n in HELPER_NAMES if re.search(rf"^def {n}\b", text, re.M)]
        if calls and block is None and len(defines) < len(calls):
            problems.append(f"{rel}: calls {', '.join(calls)} but has no block between {BEGIN!r} and {END!r} "
                            f"for kernelgym to fill")
    if problems:
        return Check("benchmark helpers", False, "\n".join(problems))
    return Check("benchmark helpers", True, f"{blocks} AKA-GENERATED block(s), each filled with kernelgym's helpers"
                 if blocks else "no AKA-GENERATED block (the task times itself)")


def check_targets(task: ReferenceTask) -> Check:
    """Each target kernel function is defined (``def name``) in one of the source files."""
    text = "\n".join((task.root / f).read_text(errors="replace") for f in task.spec.source_file_path)
    missing = [f for f in task.spec.target_kernel_functions
               if not re.search(rf"^\s*(def|__global__[^\n(]*\b){re.escape(f)}\b|\b{re.escape(f)}\s*\(", text, re.M)]
    if missing:
        return Check("target functions", False, f"{', '.join(missing)} not found in {task.spec.source_file_path}")
    return Check("target functions", True, ", ".join(task.spec.target_kernel_functions) or "none named")


def check_baseline(task: ReferenceTask, hardware: HardwareProfile, sandbox: str) -> Check:
    """The original sources pass the task's own compile and correctness commands (graded as a submission)."""
    from kernelgym.reference_tasks.grader import ReferenceGrader
    name = "baseline passes its own commands"
    with tempfile.TemporaryDirectory(prefix="kernelgym-validate-") as tmp:
        try:
            grade = ReferenceGrader(task, hardware, Path(tmp), GraderConfig(sandbox=sandbox, measure=False)
                                    ).grade(task.root)
        except KernelGymError as e:
            return Check(name, False, str(e))
    if grade.correct:
        return Check(name, True, f"compile and correctness commands pass on {hardware.name}")
    return Check(name, False, grade.summary())


def validate_reference_task(task_dir: str | Path, hardware: str | HardwareProfile | None = None,
                            sandbox: str = "bwrap", progress: Callable[[str], None] | None = None) -> list[Check]:
    """Run every check on the reference task in `task_dir` (see the module docstring); never raises for a problem of
    the task. A check that needs an earlier one that failed is not run (passed None)."""
    say = progress or (lambda _: None)
    later = ("commands", "benchmark helpers", "target functions", "hardware", "baseline passes its own commands")
    say("loading config.yaml")
    try:
        task = load_reference_task(task_dir)
    except KernelGymError as e:
        return [Check("config.yaml loads", False, str(e))] + [Check(n, None, "not run: config.yaml does not load")
                                                              for n in later]
    checks = [Check("config.yaml loads", True, f"{task.env_id}: {task.spec.task_type}, editable "
                                               f"{task.spec.source_file_path}"),
              check_commands(task), check_helpers(task), check_targets(task)]
    try:
        hw = hardware if isinstance(hardware, HardwareProfile) else detect_profile(hardware)
    except KernelGymError as e:
        return checks + [Check("hardware", False, str(e)), Check(later[-1], None, "not run: no hardware profile")]
    reason = unsupported_reason(task, hw)
    if reason is not None:
        return checks + [Check("hardware", None, f"not supported on {hw.name}: {reason}"),
                         Check(later[-1], None, f"not run on {hw.id}")]
    checks.append(Check("hardware", True, hw.name + (" (correctness only)" if hw.interpreter else "")))
    if any(c.passed is False for c in checks):
        return checks + [Check(later[-1], None, "not run: an earlier check failed")]
    say(f"running the baseline's compile and correctness commands (sandbox {sandbox})")
    checks.append(check_baseline(task, hw, sandbox))
    return checks
