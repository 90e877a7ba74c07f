"""Attack: an output that is not a plain dense tensor, or no tensor at all: a meta tensor (no data), a sparse one,
a list; a comparison written for dense tensors may raise, or compare something else.

Defence: `dense_real_cpu_tensor_only` (only dense real strided CPU tensors are compared; any error while comparing
is a failed comparison, never an exception).
Honest twin: the reference rounded to fp16, a dense tensor, passes (nan_output.py).
"""
import torch

from kernelgym.grader.compare import compare_outputs
from kernelgym.task import Tolerance

TOL = Tolerance(atol=1e-2, rtol=1e-2)
CFG = {"dtype": "float16"}


def test_exotic_output_tensor_fails_cleanly():
    meta = torch.empty(4, 8, device="meta", dtype=torch.float16)
    ok, msg, _ = compare_outputs(meta, torch.randn(4, 8), CFG, TOL)
    assert not ok and "dense real tensor" in msg
    sparse = torch.randn(4, 8).half().to_sparse()
    assert not compare_outputs(sparse, torch.randn(4, 8), CFG, TOL)[0]


def test_a_non_tensor_output_fails():
    assert "not a tensor" in compare_outputs([1, 2], torch.randn(4, 8), CFG, TOL)[1]
