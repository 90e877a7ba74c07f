"""Attack: PyTorch computes the output (pow, mean, rsqrt, mul) while a 16-element Triton kernel of the candidate's runs
beside it, so a launch counter is satisfied; the static check is off (as a form it cannot see would be).

Defence: `outside_observer_kernels` (the check runs once more under Nsight Compute; every kernel of each checked call
and of its warm-up must be one the candidate's sources define, or PyTorch's fill or copy). The report used here is
the real one of this attack on the H200 (2026-12-01; graded there 20.0, benchmarks/results/README.md),
recorded in the harness's earlier marker layout (tests/data/ncu/README.md).
Honest twin: the baseline's own report (one rmsnorm_kernel per call) scores as before.
"""
N = 5


def test_pytorch_kernels_beside_a_token_kernel_fail_every_config(observed_grader, monkeypatch, recorded):
    g = observed_grader([(0.05, 0.05)] * N, recorded("rmsnorm_torch_beside_token.v1-layout.csv"),
                        recorded("rmsnorm_baseline.csv"))
    token = '''import triton\nimport triton.language as tl\n@triton.jit\ndef token_kernel(p):\n    pass\n'''
    monkeypatch.setattr(g.backend, "own_kernel_names", lambda sources: {"token_kernel"})
    grade = g.grade(g.task.root, seed=1)
    assert not grade.correct and grade.score == 20.0 and grade.checks["observer"] == "failed"
    assert all("pow_tensor_scalar" in row["error"] for row in grade.configs), grade.summary()
    assert token  # the kernel such a candidate defines: its launches are allowed, PyTorch's are not


def test_honest_twin_scores_as_before(observed_grader, recorded):
    report = recorded("rmsnorm_baseline.csv")
    g = observed_grader([(0.05, 0.05)] * N, report, report)
    grade = g.grade(g.task.root, seed=1)
    assert grade.correct and grade.score > 215 and grade.checks["observer"] == "passed"
