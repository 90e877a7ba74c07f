"""RMSNorm over the last dimension, as a Triton kernel (baseline).

y = x / sqrt(mean(x^2) + eps) * weight, accumulated in fp32.

This is the task's honest, unoptimized baseline: one program per row, a fixed
block of 1024 columns, two passes over the row (sum of squares, then
normalize and store). Edit this file to make it faster; keep `rmsnorm`'s
signature and semantics.
"""
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 1024
NUM_WARPS = 4


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps,
                   BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    # Pass 1: sum of squares in fp32.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        acc += x * x
    mean_sq = tl.sum(acc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(mean_sq + eps)
    # Pass 2: normalize, scale by weight, store in the input dtype.
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = x * rstd * w
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm of `x` (rows, hidden) with `weight` (hidden,); returns a new tensor like `x`."""
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    y = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    rmsnorm_kernel[(n_rows,)](x2, weight, y, n_cols, x2.stride(0), y.stride(0), eps,
                              BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS)
    return y.reshape(x.shape)
