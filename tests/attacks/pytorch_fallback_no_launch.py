"""Attack: a Triton kernel defined but never launched, with PyTorch doing the work (the kernel file imports and
compiles, the output is right).

Defence: `triton_launch_required` (for Triton tasks a config fails when no @triton.jit function from the
candidate's own files was launched while computing it). Not caught: a token launch beside PyTorch compute
(docs/THREAT_MODEL.md, known limits).
Honest twin: the baseline, which launches its kernel, scores 120 (tests/test_grader.py).
"""
from kernelgym.discovery import get_task

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()


def test_pytorch_fallback_without_a_triton_launch_fails(grade):
    # The Triton kernel is defined but never launched; PyTorch does the work.
    src = BASELINE.replace('''    rmsnorm_kernel[(n_rows,)](''', '''    y = (x2.float() * torch.rsqrt(x2.float().pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
    return y.reshape(x.shape)
    rmsnorm_kernel[(n_rows,)](''')
    g = grade(src)
    assert g.compiled and not g.correct and g.score == 20.0
    assert "no triton kernel" in "\n".join(g.stages[1].messages).lower()
