"""Vendor-specific Triton launch options: which the grading hardware accepts, read from the hardware profiles.

AMD's backend accepts ``waves_per_eu``, ``matrix_instr_nonkdim`` and ``kpack``; NVIDIA's does not (and has
``maxnreg``, which AMD lacks). A kernel that passes an option its hardware does not support gets a note in the
compile stage, instead of a silent difference between machines.
"""
from __future__ import annotations

import re

from kernelgym.hardware import HardwareProfile, all_profiles


def unsupported_launch_options(source: str, hardware: HardwareProfile) -> list[str]:
    """Notes for every launch option used in `source` that another profile lists but `hardware` does not."""
    if hardware.interpreter:
        return []
    known = set().union(*(set(p.triton_launch_options) for p in all_profiles().values()))
    notes = []
    for opt in sorted(known - set(hardware.triton_launch_options)):
        if re.search(rf"\b{opt}\s*=", source):
            owners = sorted(p.name for p in all_profiles().values() if opt in p.triton_launch_options)
            notes.append(f"launch option `{opt}` is not supported on {hardware.name} ({hardware.vendor}); it is "
                         f"accepted on {', '.join(owners)}. Triton may ignore or reject it here.")
    return notes
