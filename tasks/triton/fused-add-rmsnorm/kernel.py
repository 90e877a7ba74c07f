"""Fused residual add + RMSNorm over the last dimension, as a Triton kernel (baseline).

r = x + residual, rounded to the input dtype (as vLLM's fused_add_rms_norm);
y = r / sqrt(mean(r^2) + eps) * weight, accumulated in fp32. Returns (y, r).

This is the task's honest, unoptimized baseline: one program per row, a fixed
block of 1024 columns, two passes over the row (add, store the sum and
accumulate its sum of squares; then load x and residual again, normalize and
store). Edit this file to make it faster; keep `fused_add_rmsnorm`'s signature
and semantics.
"""
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 1024
NUM_WARPS = 4


@triton.jit
def fused_add_rmsnorm_kernel(x_ptr, res_ptr, w_ptr, y_ptr, r_ptr, n_cols, x_row_stride, res_row_stride,
                             y_row_stride, r_row_stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    res_row = res_ptr + row * res_row_stride
    y_row = y_ptr + row * y_row_stride
    r_row = r_ptr + row * r_row_stride
    # Pass 1: r = x + residual rounded to the input dtype, stored; sum of squares of r in fp32.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        res = tl.load(res_row + cols, mask=mask, other=0.0).to(tl.float32)
        r = (x + res).to(r_ptr.dtype.element_ty)
        tl.store(r_row + cols, r, mask=mask)
        rf = r.to(tl.float32)
        acc += rf * rf
    mean_sq = tl.sum(acc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(mean_sq + eps)
    # Pass 2: recompute r from x and residual, normalize, scale by weight, store in the input dtype.
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        res = tl.load(res_row + cols, mask=mask, other=0.0).to(tl.float32)
        rf = (x + res).to(r_ptr.dtype.element_ty).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = rf * rstd * w
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                      eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused add + RMSNorm of `x` and `residual` (tokens, hidden) with `weight` (hidden,).

    Returns (y, residual_out): two new tensors like `x`; the inputs are not modified.
    """
    x2 = x.reshape(-1, x.shape[-1])
    res2 = residual.reshape(-1, residual.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    if res2.stride(-1) != 1:
        res2 = res2.contiguous()
    y = torch.empty_like(x2)
    r = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    fused_add_rmsnorm_kernel[(n_rows,)](x2, res2, weight, y, r, n_cols, x2.stride(0), res2.stride(0),
                                        y.stride(0), r.stride(0), eps, BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS)
    return y.reshape(x.shape), r.reshape(x.shape)
