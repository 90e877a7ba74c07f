"""Attack: on the CPU interpreter, a Triton kernel that cannot compile (tl.arange of a range that is not a power of
2: a CompilationError on a GPU, compile gate failed, 0) raised triton's InterpreterError, which the backend did not
count as a compile error: the config failed at run time and the compile gate passed, 20 points on the machines
where most CPU training data is made.

Defence: `interpreter_compile_errors` (an InterpreterError raised from triton.language's own checks is a compile
error, as on a GPU).
Honest twin: the baseline scores 120 (tests/test_grader.py), and a kernel that compiles but computes the wrong
values scores 20 (test_wrong_output_scores_20).
"""
from kernelgym.discovery import get_task

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()
BROKEN = BASELINE.replace("cols = start + tl.arange(0, BLOCK)", "cols = start + tl.arange(0, 1000)")


def test_a_kernel_that_cannot_compile_gets_no_compile_points_on_the_interpreter(grade):
    assert BROKEN != BASELINE
    g = grade(BROKEN)
    assert not g.compiled and g.score == 0.0, (g.stages[1].messages[:1], g.score)
    assert "power of 2" in "\n".join(g.stages[0].messages)
