"""Softmax over the last dimension, as a Triton kernel (baseline).

y = exp(x - max(x)) / sum(exp(x - max(x))), computed in fp32, stored in x's dtype.

This is the task's honest, unoptimized baseline: one program per row, a fixed block of 1024 columns and three
passes over the row (max; sum of exponentials; normalize and store). Edit this file to make it faster; keep
`softmax`'s signature and semantics.
"""
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 1024
NUM_WARPS = 4


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    # Pass 1: the row's maximum.
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    # Pass 2: the sum of exponentials.
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        s += tl.exp(x - row_max)
    denom = tl.sum(s, axis=0)
    # Pass 3: normalize and store.
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_max) / denom
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax of x (rows, cols) over the last dimension; returns a new tensor like x."""
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    y = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    softmax_kernel[(n_rows,)](x2, y, n_cols, x2.stride(0), y.stride(0), BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS)
    return y.reshape(x.shape)
