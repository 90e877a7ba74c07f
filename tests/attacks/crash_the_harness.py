"""Attack: a kernel that crashes its process (here os.abort(); an unmasked out-of-bounds store corrupts the process
it runs in just as silently), to take the env down with it.

Defence: `candidate_in_own_process` (the candidate runs in a sandboxed process of its own: its death is a failed
stage, compile before its import finished, correctness after; the env lives on).
Honest twin: the baseline scores 120 (tests/test_grader.py, test_baseline_scores_120_on_interpreter).
"""
from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()


def test_crashing_kernel_fails_gate_not_env(grade):
    src = BASELINE.replace('    x2 = x.reshape(-1, x.shape[-1])', '    import os; os.abort()\n    x2 = x.reshape(-1, x.shape[-1])')
    g = grade(src, config=GraderConfig(static_check=False))  # the static check refuses os.abort: let it run and die
    assert g.compiled and not g.correct and g.score == 20.0
    assert "died" in "\n".join(g.stages[1].messages)
