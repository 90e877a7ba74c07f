"""Attack: the kernel doubles its output, and the workspace's reference.py is edited to double its answer too, so
that a grader using the workspace's reference would find them equal.

Defence: `pristine_task_files` (only the editable files come from the workspace; every other file is copied
pristine from the task, and the parent's reference is loaded from the task directory, never a workspace).
Honest twin: the baseline with the workspace's reference untouched scores 120 (tests/test_grader.py).
"""
from kernelgym.discovery import get_task

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()


def test_tampered_reference_in_workspace_is_ignored(grade):
    # The kernel doubles its output and the workspace's reference is edited to match: the grader uses the
    # pristine reference, so the kernel still fails.
    ref = (TASK.root / "reference.py").read_text().replace("return xf * rstd * weight.float()",
                                                           "return 2.0 * xf * rstd * weight.float()")
    g = grade(BASELINE.replace("y = x * rstd * w", "y = 2.0 * x * rstd * w"), {"reference.py": ref})
    assert g.score == 20.0
