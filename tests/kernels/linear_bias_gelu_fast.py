"""A known-faster kernel.py for triton-linear-bias-gelu (untimed here: see tests/test_task_suite.py).

Same semantics as the task's baseline. Tiles picked from the shape (128 x 256 x 64, 8 warps, 3 stages for large
GEMMs; narrower for small M), grouped program order for L2 reuse, and the bias + exact GELU epilogue on the fp32
accumulator. Expected >= 1.2x on an H200; not yet measured.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def linear_bias_gelu_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                            stride_ym, stride_yn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                            BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rm[:, None] * stride_xm + rk[None, :] * stride_xk
    w_ptrs = w_ptr + rn[None, :] * stride_wn + rk[:, None] * stride_wk
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        x = tl.load(x_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        w = tl.load(w_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    v = acc + bias[None, :]
    y = 0.5 * v * (1.0 + tl.math.erf(v * 0.7071067811865476))
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :] * stride_yn, y.to(y_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def linear_bias_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """gelu(x @ weight^T + bias) for x (M, K), weight (N, K), bias (N,); returns a new (M, N) tensor of x's dtype."""
    M, K = x.shape
    N = weight.shape[0]
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M <= 256:
        bm, bn, bk, warps, stages = 64, 128, 64, 4, 4
    else:
        bm, bn, bk, warps, stages = 128, 256, 64, 8, 3
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    linear_bias_gelu_kernel[grid](x, weight, bias, y, M, N, K, x.stride(0), x.stride(1), weight.stride(0),
                                  weight.stride(1), y.stride(0), y.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                  GROUP_M=8, num_warps=warps, num_stages=stages)
    return y
