"""Attack: the candidate names a kernel of its own like a vendor library's (``sm90_xmma_gemm_...``, ``nvjet_...``) or
like a PyTorch kernel, so that the library or PyTorch kernel it really calls passes as its own in the observer's list.

Defence: `library_names_not_own` (a kernel counts as the candidate's own only by a name its sources define, at file
scope (no namespace), and not in the form vendor libraries name theirs; a Triton kernel only by its bare name, which a
library's C++ kernel of the same name, carrying its template and parameters, never has).
Honest twin: a kernel with a plain name of its own passes (tests/test_observer.py).
"""
import pytest


@pytest.mark.parametrize("name", ["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
                                  "nvjet_tst_128x64_64x8_2x1_v_bz_TNN", "cutlass_80_tensorop_s1688gemm_64x64",
                                  "void at::native::reduce_kernel<512, 1>(float)",
                                  # library kernels at file scope (review, 2026-12-01): cuBLAS, PyTorch's softmax
                                  "void gemv2T_kernel_val<int, int, float, float, 128, 16, 4, 4, false, false>(float *)",
                                  "void softmax_warp_forward<float, float, float, 10, false, false>(float *, int)"])
def test_library_named_kernels_are_not_the_candidates(observed_grader, observation, monkeypatch, name):
    base = name.split("<")[0].split("::")[-1].removeprefix("void ")
    g = observed_grader([(0.05, 0.05)] * 5, observation([[(name, 4e3)]] * 5),
                        observation([[("rmsnorm_kernel", 4e3)]] * 5))
    monkeypatch.setattr(g.backend, "own_kernel_names", lambda sources: {"rmsnorm_kernel", base})
    grade = g.grade(g.task.root, seed=1)
    assert not grade.correct and grade.score == 20.0 and grade.checks["observer"] == "failed"
