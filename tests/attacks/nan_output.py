"""Attack: NaN or Inf in the output. NaN compares False both ways: a check written as ``not (err > bound)``, or
one that drops non-finite values, lets it through.

Defence: `non_finite_never_pass` (the elementwise test err <= bound is False for NaN; NaN/Inf where the reference
is finite is reported as such; where the reference itself is NaN or Inf, anything goes).
Honest twin: the reference rounded to fp16 passes, also against a reference with a NaN in it.
"""
import torch

from kernelgym.grader.compare import compare_outputs
from kernelgym.task import Tolerance

TOL = Tolerance(atol=1e-2, rtol=1e-2)
CFG = {"dtype": "float16"}


def test_a_nan_output_fails():
    ref = torch.randn(4, 8)
    good = ref.half()
    assert compare_outputs(good, ref, CFG, TOL)[0]
    nan = good.clone()
    nan[0, 0] = float("nan")
    assert "non-finite" in compare_outputs(nan, ref, CFG, TOL)[1]


def test_an_inf_output_fails_and_a_non_finite_reference_allows_anything_there():
    ref = torch.randn(4, 8)
    inf = ref.half()
    inf[1, 2] = float("inf")
    assert "non-finite" in compare_outputs(inf, ref, CFG, TOL)[1]
    ref_nan = ref.clone()
    ref_nan[0, 1] = float("nan")  # where the reference is NaN, anything goes
    assert compare_outputs(ref.half(), ref_nan, CFG, TOL)[0]
