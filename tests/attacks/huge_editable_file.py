"""Attack: a huge (here sparse: nearly no disk, 64 MiB to read) editable file, to exhaust or stall the trusted
parent that copies it into the grading directory.

Defence: `editable_file_cap` (an editable file is read as a regular file of at most MAX_EDITABLE_BYTES; anything
else is a compile-stage problem, not a crash).
Honest twin: the baseline's kernel.py is copied and scores 120 (tests/test_grader.py).
"""
from kernelgym.discovery import get_task
from kernelgym.grader import Grader
from kernelgym.hardware import detect_profile


def test_huge_or_special_kernel_files_are_problems_not_crashes(grade, tmp_path, make_workspace):
    ws = make_workspace(name="ws-huge")
    with open(ws / "kernel.py", "wb") as f:
        f.truncate(64 << 20)  # sparse: nearly no disk, 64 MiB to read
    g = Grader(get_task("triton-rmsnorm"), detect_profile("cpu-interpreter"), tmp_path / "grading-huge").grade(ws, seed=1)
    assert g.score == 0.0 and "allowed" in "\n".join(g.stages[0].messages)
