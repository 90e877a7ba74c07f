"""Attack: an all-zero (or constant) output where the true values are tiny: every element clears the absolute
tolerance (|0 - ref| <= atol), so an elementwise check alone passes a kernel that computes nothing.

Defences: `relative_l2_guard` (besides the elementwise bound, a relative L2 error above MAX_REL_L2 fails, over the
reference's finite values, so a NaN in the reference does not switch it off) and `trivial_output_task_check` (the
grader checks the task too: where a zero or constant output would pass a seen config's prepared reference, the
task is refused with a TaskSpecError, before any candidate is graded on it).
Honest twin: the tiny reference rounded to fp16 passes; a reference with real values is not flagged.
"""
import torch

from kernelgym.grader.compare import compare_outputs, prepare_reference, trivial_output_passes
from kernelgym.task import Tolerance

TOL = Tolerance(atol=1e-2, rtol=1e-2)
CFG = {"dtype": "float16"}


def test_zeros_clear_atol_on_tiny_values_but_not_the_relative_l2_guard():
    ref = torch.randn(4, 8)
    tiny = ref * 1e-3  # true values small: zeros clear atol elementwise, but not the relative L2 check
    assert not compare_outputs(torch.zeros(4, 8, dtype=torch.float16), tiny, CFG, TOL)[0]
    assert compare_outputs(tiny.half(), tiny, CFG, TOL)[0]


def test_a_nan_in_the_reference_does_not_switch_the_guard_off():
    ref_nan = torch.randn(4, 8)
    ref_nan[0, 1] = float("nan")
    tiny_nan = ref_nan * 1e-3
    assert "relative L2" in compare_outputs(torch.zeros(4, 8, dtype=torch.float16), tiny_nan, CFG, TOL)[1]


def test_where_zeros_would_pass_the_task_is_flagged_not_the_kernel_graded():
    # A reference that is all zeros (or constant) on a config: zeros (or that constant) pass every check above, so
    # the attack would succeed; the grader refuses such a task instead (the grading-level test is
    # tests/test_task_io.py, test_a_task_whose_tolerance_lets_zeros_pass_is_refused).
    zeros = torch.zeros(4, 8)
    assert compare_outputs(torch.zeros(4, 8, dtype=torch.float16), zeros, CFG, TOL)[0]  # the attack would pass
    assert "all-zero" in trivial_output_passes(prepare_reference(zeros, TOL), "float16", TOL)
    constant = torch.full((4, 8), 3.0)
    assert "constant" in trivial_output_passes(prepare_reference(constant, TOL), "float16", TOL)
    assert trivial_output_passes(prepare_reference(torch.randn(4, 8), TOL), "float16", TOL) is None
