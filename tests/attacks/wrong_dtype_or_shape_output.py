"""Attack: an output of another dtype than the config's (a lower precision, which a loose tolerance may let
through, or a higher one that hides what the kernel really stores) or of another shape (a partial or broadcast
result), compared as if it were right.

Defence: `shape_and_dtype_match` (the output's dtype must be the config's and its shape the reference's; the
tolerance is per dtype).
Honest twin: the reference rounded to the config's dtype passes.
"""
import torch

from kernelgym.grader.compare import compare_outputs
from kernelgym.task import Tolerance

TOL = Tolerance(atol=1e-2, rtol=1e-2)
CFG = {"dtype": "float16"}


def test_another_shape_or_dtype_fails():
    ref = torch.randn(4, 8)
    good = ref.half()
    assert compare_outputs(good, ref, CFG, TOL)[0]
    assert "shape" in compare_outputs(good[:2], ref, CFG, TOL)[1]
    assert "dtype" in compare_outputs(good.float(), ref, CFG, TOL)[1]


def test_a_lower_precision_output_fails_on_a_float32_config():
    ref = torch.randn(4, 8)
    assert compare_outputs(ref, ref, {"dtype": "float32"}, TOL)[0]
    assert "dtype" in compare_outputs(ref.half(), ref, {"dtype": "float32"}, TOL)[1]
