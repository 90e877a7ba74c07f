"""Grading the same kernel twice gives the same verdicts (issue 16): per config, the stage outcomes and the score,
for a correct kernel, a wrong one and one that crashes its process, on the CPU interpreter (nothing timed)."""
import pytest

from kernelgym.grader import GraderConfig

WRONG = '''
import torch, triton, triton.language as tl

@triton.jit
def rmsnorm_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)  # a copy, not a norm

def rmsnorm(x, weight, eps=1e-6):
    y = torch.empty_like(x)
    rmsnorm_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y
'''

CRASH = '''
import os

def rmsnorm(x, weight, eps=1e-6):
    os.abort()  # the process dies in the checked call
'''


def verdicts(grade):
    return (grade.compiled, grade.correct, round(grade.score, 6),
            [(c.get("correct"), (c.get("error") or "")[:40]) for c in grade.configs],
            [(s.name, s.passed) for s in grade.stages])


@pytest.mark.parametrize("source", [None, WRONG, CRASH], ids=["baseline", "wrong", "crash"])
def test_the_same_kernel_graded_twice_gets_the_same_verdicts(grade, source):
    config = GraderConfig(static_check=False)  # the crash must reach the harness, not stop at the static check
    first, second = grade(source, config=config), grade(source, config=config)
    assert verdicts(first) == verdicts(second)
    if source is None:
        assert first.correct and first.score == 120.0
    else:  # imported, then wrong or dead in the checked call: compiles, not correct
        assert first.compiled and not first.correct and first.score == 20.0
