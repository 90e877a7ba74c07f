"""Attack: the candidate returns zeros (launching a token Triton kernel for the launch counter) and, at import,
patches whatever a checker in its process would use: torch.allclose, torch.isclose, torch.equal, Tensor.__eq__ and
the comparison a harness might make, so that any comparison made there says "equal".

Defence: `correctness_in_trusted_parent` (the harness only saves outputs; the parent compares them with a reference
it computed itself from the pristine task: nothing the candidate patches takes part in the decision).
Graded with the static provenance check off, which refuses the assignments to torch first
(`static_provenance_check`): a patch it cannot see (built at run time, or made in a thread) would be the same attack.
Honest twin: the baseline, unpatched, scores 120 (tests/test_grader.py).
"""
from kernelgym.grader import GraderConfig

PATCH_THE_CHECKER = r'''
import torch, triton, triton.language as tl

_true = lambda *a, **k: True
torch.allclose = _true
torch.equal = _true
torch.isclose = lambda a, b, *args, **kw: torch.ones_like(a, dtype=torch.bool)
torch.Tensor.__eq__ = lambda a, b: torch.ones_like(a, dtype=torch.bool)
torch.Tensor.allclose = _true


@triton.jit
def rmsnorm_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32).to(y_ptr.dtype.element_ty), mask=offs < n)


def rmsnorm(x, weight, eps=1e-6):
    y = torch.empty_like(x)
    rmsnorm_kernel[(triton.cdiv(y.numel(), 1024),)](y, y.numel(), BLOCK=1024)  # satisfies the launch counter
    return y  # all zeros: wrong
'''


def test_patching_the_checker_in_the_candidates_process_passes_nothing(grade):
    g = grade(PATCH_THE_CHECKER, config=GraderConfig(static_check=False))
    assert g.compiled and not g.correct and g.score == 20.0, g.summary()
    assert any("outside atol" in (c["error"] or "") or "relative L2" in (c["error"] or "") for c in g.configs)
