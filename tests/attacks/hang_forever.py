"""Attack: a kernel that never returns, to hang the grading (and the env waiting for its reward).

Defence: `harness_timeout` (the harness process runs under a limit derived from the task (Grader.timeout_s) or
GraderConfig.timeout_s; at the limit its whole process
group is killed and the grade says so).
Honest twin: the baseline scores 120 well within the limit (tests/test_grader.py).
"""
from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()


def test_hang_is_killed(grade):
    src = BASELINE.replace('    x2 = x.reshape(-1, x.shape[-1])', '    while True: pass\n    x2 = 0')
    g = grade(src, config=GraderConfig(timeout_s=8.0))
    assert g.score == 20.0 and "limit" in "\n".join(g.stages[1].messages)
