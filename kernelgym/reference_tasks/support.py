"""Where a reference task can run: its ``platform_support``, its task type, and AMD-only things in its sources.

A task that cannot run on a hardware profile is still listed (``kernelgym list``), with the reason; making its env
there raises `UnsupportedTaskError` with the same reason.
"""
from __future__ import annotations

import re

from kernelgym.errors import KernelGymError, TaskSpecError
from kernelgym.hardware import HardwareProfile, all_profiles
from kernelgym.reference_tasks.spec import ReferenceTask
from kernelgym.task import read_task_file

#: Task types whose sources are HIP: graded on AMD GPUs only (as kernelgym's own hip language).
AMD_TASK_TYPES = ("hip2hip", "torch2hip")
#: fp8 formats only AMD's CDNA3 (gfx942: MI300 series) has ("fnuz": finite, no negative zero), in torch's and
#: Triton's spellings; CDNA4 (gfx950) and NVIDIA use the OCP formats (e4m3fn, e5m2) instead.
FNUZ_ARCHS = ("gfx942",)
FNUZ_PATTERN = re.compile(r"\b(float8_e4m3fnuz|float8_e5m2fnuz|fp8e4b8|fp8e5b16|float8e4b8|float8e5b16)\b")
SOURCE_SUFFIXES = (".py", ".cpp", ".cu", ".hip", ".h", ".hpp", ".cuh")
#: Source files larger than this are not searched for AMD-only features.
MAX_SOURCE_BYTES = 4 << 20


class UnsupportedTaskError(KernelGymError):
    """The task cannot run on this hardware (AMD-only, or marked skip); the message says why."""


def amd_only_launch_options() -> list[str]:
    """Triton launch options that AMD profiles accept and no NVIDIA profile does (waves_per_eu, ...)."""
    profiles = all_profiles().values()
    amd = set().union(*(set(p.triton_launch_options) for p in profiles if p.vendor == "amd"))
    nvidia = set().union(*(set(p.triton_launch_options) for p in profiles if p.vendor == "nvidia"))
    return sorted(amd - nvidia)


def _sources(task: ReferenceTask) -> dict[str, str]:
    out = {}
    for rel in task.files():
        if rel.suffix in SOURCE_SUFFIXES:
            # Regular files only, capped: a FIFO or a link to /dev/zero in the folder must not hang `kernelgym list`.
            try:
                out[str(rel)] = read_task_file(task.root, rel, MAX_SOURCE_BYTES).decode(errors="replace")
            except TaskSpecError:
                continue
    return out


def amd_only_features(task: ReferenceTask, hardware: HardwareProfile) -> list[str]:
    """What in the task's source files `hardware` lacks: fnuz fp8 types (off gfx942) and AMD-only launch options
    (off AMD), each as ``file: what``."""
    found = []
    options = amd_only_launch_options() if hardware.vendor != "amd" else []
    fnuz = not hardware.arch.lower().startswith(FNUZ_ARCHS)
    for rel, text in _sources(task).items():
        for m in sorted(set(FNUZ_PATTERN.findall(text))) if fnuz else []:
            found.append(f"{rel}: fp8 type `{m}` (the fnuz format of {', '.join(FNUZ_ARCHS)} GPUs)")
        for opt in options:
            # A keyword argument or a config-dict key: `waves_per_eu=2`, `"waves_per_eu": 2`.
            if re.search(rf"\b{opt}\s*=|['\"]{opt}['\"]\s*:", text):
                found.append(f"{rel}: launch option `{opt}` (AMD only)")
    return found


def unsupported_reason(task: ReferenceTask, hardware: HardwareProfile) -> str | None:
    """Why `task` cannot run on `hardware`, or None where it can.

    In order: ``platform_support.status: skip`` (its `skip_reason`), a ``required_arch`` the device's arch does not
    start with, a HIP task type off AMD, features of its sources the hardware lacks (`amd_only_features`).
    """
    ps = task.spec.platform_support
    if ps is not None and ps.status == "skip":
        return f"platform_support.status is skip: {ps.skip_reason or 'no skip_reason given'}"
    if ps is not None and ps.required_arch:
        archs = [ps.required_arch] if isinstance(ps.required_arch, str) else list(ps.required_arch)
        if not any(hardware.arch.lower().startswith(a.lower()) for a in archs):
            return f"platform_support.required_arch is {', '.join(archs)}, not {hardware.arch}"
    if hardware.vendor != "amd" and task.spec.task_type in AMD_TASK_TYPES:
        return f"task_type {task.spec.task_type} builds HIP sources, which need an AMD GPU"
    features = amd_only_features(task, hardware)
    if features:
        # On an AMD GPU what is missing is the one architecture (fnuz fp8: gfx942), not AMD itself.
        needs = "needs AMD hardware" if hardware.vendor != "amd" else f"needs another AMD GPU than {hardware.arch}"
        return f"{needs}: {'; '.join(features)}"
    return None


def check_supported(task: ReferenceTask, hardware: HardwareProfile) -> None:
    """Raise `UnsupportedTaskError` where `task` cannot run on `hardware`."""
    reason = unsupported_reason(task, hardware)
    if reason is not None:
        raise UnsupportedTaskError(f"{task.env_id} ({task.root}) cannot run on {hardware.name}: {reason}. "
                                   f"`kernelgym list --tasks-dir {task.root.parent}` shows where each task runs.")
