"""Cumulative sum along the last dimension, as a Triton kernel (baseline).

y[r, j] = sum(x[r, :j + 1]), accumulated in fp32 and returned in fp32 (as the cumulative probabilities of
top-p sampling over a sorted vocabulary).

This is the task's honest, unoptimized baseline: one program per row that scans the row block by block (1024
columns), carrying the running total from block to block. Edit this file to make it faster; keep `cumsum`'s
signature and semantics.
"""
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 1024
NUM_WARPS = 4


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        y = tl.cumsum(x, axis=0) + carry
        tl.store(y_ptr + row * y_row_stride + cols, y, mask=mask)
        carry += tl.sum(x, axis=0)


def cumsum(x: torch.Tensor) -> torch.Tensor:
    """Inclusive cumulative sum of x (rows, cols) along the last dimension; returns a new fp32 tensor."""
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    n_rows, n_cols = x2.shape
    y = torch.empty((n_rows, n_cols), dtype=torch.float32, device=x.device)
    cumsum_kernel[(n_rows,)](x2, y, n_cols, x2.stride(0), y.stride(0), BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS)
    return y.reshape(x.shape)
