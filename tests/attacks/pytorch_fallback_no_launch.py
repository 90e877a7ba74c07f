"""Attack: a Triton kernel defined but never launched, with PyTorch doing the work (the kernel file imports and
compiles, the output is right).

Defences: `static_provenance_check` (before any candidate code runs, the parent reads the entry point's path in the
syntax tree and refuses the torch compute on it) and `triton_launch_required` (for Triton tasks a config fails when
no @triton.jit function from the candidate's own files was launched while computing it; tested with the static check
and the dynamic check off, as a fallback neither sees would be). Compute beside a token launch is the dynamic check's
(tests/attacks/host_tensor_arithmetic.py) and the outside observer's.
Honest twin: the baseline, which launches its kernel, scores 120 (tests/test_grader.py).
"""
from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()
# The Triton kernel is defined but never launched; PyTorch does the work.
FALLBACK = BASELINE.replace('''    rmsnorm_kernel[(n_rows,)](''', '''    y = (x2.float() * torch.rsqrt(x2.float().pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
    return y.reshape(x.shape)
    rmsnorm_kernel[(n_rows,)](''')


def test_pytorch_compute_on_the_entry_points_path_is_refused_before_it_runs(grade):
    g = grade(FALLBACK)
    assert g.compiled and not g.correct and g.score == 20.0
    text = "\n".join(g.stages[1].messages)
    assert "provenance" in text and "rsqrt" in text, g.summary()


def test_pytorch_fallback_without_a_triton_launch_fails(grade):
    g = grade(FALLBACK, config=GraderConfig(static_check=False, dynamic_check=False))
    assert g.compiled and not g.correct and g.score == 20.0
    assert "no triton kernel" in "\n".join(g.stages[1].messages).lower()
    # The grade's checks name the launch counter's verdict (the harness's launch_missing per config).
    assert g.checks["launch_counter"].startswith("failed: none of the candidate's own kernels launched on config(s) 0")
    assert g.checks["triton_launch_required"] == g.checks["launch_counter"]
