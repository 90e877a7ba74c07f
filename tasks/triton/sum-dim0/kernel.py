"""Sum along axis 0 (a column reduction), as a Triton kernel (baseline).

y[j] = sum_i x[i, j], accumulated in fp32 and returned in fp32 (the bias gradient of a linear layer: the sum of
the output gradient over all tokens).

This is the task's honest, unoptimized baseline: one program per block of 128 columns that walks all the rows
in tiles of 32. Edit this file to make it faster; keep `sum_dim0`'s signature and semantics.
"""
import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 128
NUM_WARPS = 4


@triton.jit
def sum_dim0_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, n_rows, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < n_rows) & col_mask[None, :]
        ptrs = x_ptr + rows[:, None].to(tl.int64) * x_row_stride + cols[None, :]
        acc += tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + cols, tl.sum(acc, axis=0), mask=col_mask)


def sum_dim0(x: torch.Tensor) -> torch.Tensor:
    """Sum of x (rows, cols) over its rows; returns a new fp32 tensor of shape (cols,)."""
    if x.stride(-1) != 1:
        x = x.contiguous()
    n_rows, n_cols = x.shape
    y = torch.empty((n_cols,), dtype=torch.float32, device=x.device)
    grid = (triton.cdiv(n_cols, BLOCK_N),)
    sum_dim0_kernel[grid](x, y, n_rows, n_cols, x.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=NUM_WARPS)
    return y
