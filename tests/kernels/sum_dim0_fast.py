"""A known-faster kernel.py for triton-sum-dim0 (untimed here: see tests/test_task_suite.py).

Same semantics as the task's baseline. The rows are split over programs as well as the columns: a 2D grid of
(256-column block, row split), each program summing its 64 x 256 tiles over its share of the rows and adding its
partial column sums into the zeroed fp32 output with atomic adds. Enough programs to fill the GPU whatever the
shape. Expected >= 1.2x on an H200 for the tall seen configs; not yet measured.
"""
import torch
import triton
import triton.language as tl

BLOCK_M = 64
BLOCK_N = 256
TARGET_PROGRAMS = 1024


@triton.jit
def sum_dim0_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, rows_per_split,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_n = tl.program_id(0)
    split = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    row_start = split * rows_per_split
    row_end = tl.minimum(row_start + rows_per_split, n_rows)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(row_start, row_end, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < row_end) & col_mask[None, :]
        ptrs = x_ptr + rows[:, None].to(tl.int64) * x_row_stride + cols[None, :]
        acc += tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
    tl.atomic_add(y_ptr + cols, tl.sum(acc, axis=0), mask=col_mask)


def sum_dim0(x: torch.Tensor) -> torch.Tensor:
    """Sum of x (rows, cols) over its rows; returns a new fp32 tensor of shape (cols,)."""
    if x.stride(-1) != 1:
        x = x.contiguous()
    n_rows, n_cols = x.shape
    y = torch.zeros((n_cols,), dtype=torch.float32, device=x.device)
    col_blocks = triton.cdiv(n_cols, BLOCK_N)
    row_blocks = triton.cdiv(n_rows, BLOCK_M)
    splits = max(1, min(row_blocks, TARGET_PROGRAMS // col_blocks))
    rows_per_split = triton.cdiv(row_blocks, splits) * BLOCK_M
    splits = triton.cdiv(n_rows, rows_per_split)
    sum_dim0_kernel[(col_blocks, splits)](x, y, n_rows, n_cols, x.stride(0), rows_per_split, BLOCK_M=BLOCK_M,
                                          BLOCK_N=BLOCK_N, num_warps=8)
    return y
