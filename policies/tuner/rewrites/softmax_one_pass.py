"""Softmax over the last dimension, as Triton kernels (one read of the row where it fits in registers; long rows
split over programs).

y = exp(x - max(x)) / sum(exp(x - max(x))), computed in fp32, stored in x's dtype.

Rewritten by kernelgym's tuner policy from the task's three-pass baseline (policies/tuner/rewrites/):

- a row of up to ONE_PASS_MAX_COLS columns is loaded once into registers, its maximum, exponentials and sum taken
  there, and stored (x read once instead of three times, each exponential computed once); short rows go several
  to a program, as one [ROWS, BLOCK] tile;
- a longer row is split into chunks of SPLIT_BY_BLOCK columns (else SPLIT_COLS), one program per (row, chunk), so a
  few long rows (a vocabulary's logits) still fill the GPU: a first kernel writes each chunk's maximum and sum of
  exponentials, a second combines the row's chunks and normalizes its own chunk (x read twice).

Launch parameters are chosen per row length (BLOCK = next power of two of the row), from tables the tuner fills per
size on a GPU:

- WARPS_BY_BLOCK: num_warps (else one warp per COLS_PER_WARP columns of the block or chunk, 1..16);
- ROWS_BY_BLOCK: rows per program for one-pass rows (else 1);
- SPLIT_BY_BLOCK: columns per chunk for long rows (else SPLIT_COLS).
"""
import torch
import triton
import triton.language as tl

ONE_PASS_MAX_COLS = 8192
COLS_PER_WARP = 256
SPLIT_COLS = 4096
WARPS_BY_BLOCK = {}
ROWS_BY_BLOCK = {}
SPLIT_BY_BLOCK = {}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr,
                   ROWS: tl.constexpr):
    # ROWS whole rows per program, as one [ROWS, BLOCK] tile read once.
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=float("-inf"))
    x = x.to(tl.float32)
    row_max = tl.where(rows < n_rows, tl.max(x, axis=1), 0.0)  # a row past the end: -inf, whose x - max is NaN
    e = tl.exp(x - row_max[:, None])
    denom = tl.sum(e, axis=1)
    y = e / denom[:, None]
    tl.store(y_ptr + rows[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_chunk_stats_kernel(x_ptr, max_ptr, sum_ptr, n_cols, x_row_stride, n_chunks, CHUNK: tl.constexpr):
    # One chunk of one row: its maximum and its sum of exp(x - that maximum).
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
    chunk_max = tl.max(x, axis=0)
    chunk_sum = tl.sum(tl.exp(x - chunk_max), axis=0)
    tl.store(max_ptr + row * n_chunks + chunk, chunk_max)
    tl.store(sum_ptr + row * n_chunks + chunk, chunk_sum)


@triton.jit
def softmax_chunk_normalize_kernel(x_ptr, y_ptr, max_ptr, sum_ptr, n_cols, x_row_stride, y_row_stride, n_chunks,
                                   CHUNK: tl.constexpr, CHUNKS: tl.constexpr):
    # The row's chunks combined (maximum, then each chunk's sum rescaled to it), then this chunk normalized.
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    idx = tl.arange(0, CHUNKS)
    ok = idx < n_chunks
    maxes = tl.load(max_ptr + row * n_chunks + idx, mask=ok, other=float("-inf"))
    sums = tl.load(sum_ptr + row * n_chunks + idx, mask=ok, other=0.0)
    row_max = tl.max(maxes, axis=0)
    denom = tl.sum(tl.where(ok, sums * tl.exp(maxes - row_max), 0.0), axis=0)
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=float("-inf")).to(tl.float32)
    y = tl.exp(x - row_max) / denom
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _warps(block, cols_per_program):
    """num_warps for rows of next-power-of-two length `block`, a program covering `cols_per_program` columns."""
    return WARPS_BY_BLOCK.get(block, max(1, min(16, cols_per_program // COLS_PER_WARP)))


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax of x (rows, cols) over the last dimension; returns a new tensor like x."""
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    y = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    block = triton.next_power_of_2(max(n_cols, 1))
    if n_cols <= ONE_PASS_MAX_COLS:
        rows = ROWS_BY_BLOCK.get(block, 1)
        softmax_kernel[(triton.cdiv(n_rows, rows),)](x2, y, n_rows, n_cols, x2.stride(0), y.stride(0), BLOCK=block,
                                                     ROWS=rows, num_warps=_warps(block, block * rows))
        return y.reshape(x.shape)
    chunk = SPLIT_BY_BLOCK.get(block, SPLIT_COLS)
    n_chunks = triton.cdiv(n_cols, chunk)
    maxes = torch.empty((n_rows, n_chunks), dtype=torch.float32, device=x.device)
    sums = torch.empty((n_rows, n_chunks), dtype=torch.float32, device=x.device)
    warps = _warps(block, chunk)
    softmax_chunk_stats_kernel[(n_rows, n_chunks)](x2, maxes, sums, n_cols, x2.stride(0), n_chunks, CHUNK=chunk,
                                                   num_warps=warps)
    softmax_chunk_normalize_kernel[(n_rows, n_chunks)](x2, y, maxes, sums, n_cols, x2.stride(0), y.stride(0),
                                                       n_chunks, CHUNK=chunk,
                                                       CHUNKS=triton.next_power_of_2(n_chunks), num_warps=warps)
    return y.reshape(x.shape)
