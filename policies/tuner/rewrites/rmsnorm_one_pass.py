"""RMSNorm over the last dimension, as a Triton kernel (one pass per row where the row fits in registers).

y = x / sqrt(mean(x^2) + eps) * weight, accumulated in fp32.

Rewritten by kernelgym's tuner policy from the task's two-pass baseline (policies/tuner/rewrites/):
a row of up to ONE_PASS_MAX_COLS columns is loaded once into registers, reduced, normalized and stored (x read
once instead of twice); longer rows keep the two-pass loop. Launch parameters are chosen per row length
(BLOCK = next power of two of the row), from three tables the tuner fills per size on a GPU:

- WARPS_BY_BLOCK: num_warps (else one warp per COLS_PER_WARP columns, 1..16);
- ROWS_BY_BLOCK: rows per program (else 1): short rows as one [ROWS, BLOCK] tile, so a program's loads are
  wider and the weight is loaded once for all its rows;
- LATE_W_BY_BLOCK: 1 loads the weight after the row's reduction (else 0, before it). Before it, both loads are in
  flight at once (one memory latency, what a short, latency-bound row needs); after it, the weight's registers
  are not live across the reduction, so more rows fit on an SM at once (what a long, bandwidth-bound row needs).
"""
import torch
import triton
import triton.language as tl

ONE_PASS_MAX_COLS = 16384
COLS_PER_WARP = 256
WARPS_BY_BLOCK = {}
ROWS_BY_BLOCK = {}
LATE_W_BY_BLOCK = {}
LONG_ROW_BLOCK = 1024
LONG_ROW_WARPS = 4


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride, eps,
                   BLOCK: tl.constexpr, ONE_PASS: tl.constexpr, ROWS: tl.constexpr, LATE_W: tl.constexpr):
    if ONE_PASS and ROWS > 1:
        # Several short rows per program, as one [ROWS, BLOCK] tile; the weight is read once for all of them.
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
        cols = tl.arange(0, BLOCK)
        col_ok = cols < n_cols
        mask = (rows[:, None] < n_rows) & col_ok[None, :]
        x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        if not LATE_W:
            w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
        mean_sq = tl.sum(x * x, axis=1) / n_cols
        rstd = 1.0 / tl.sqrt(mean_sq + eps)
        if LATE_W:
            w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
        y = x * rstd[:, None] * w[None, :]
        tl.store(y_ptr + rows[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    elif ONE_PASS:
        # The whole row in one block: read x once, keep it in registers.
        row = tl.program_id(0)
        x_row = x_ptr + row * x_row_stride
        y_row = y_ptr + row * y_row_stride
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        if not LATE_W:
            # Loaded before the reduction, so both loads are in flight at once: a multi-warp reduction
            # synchronizes the block, and a load after it would wait a second memory latency.
            w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        mean_sq = tl.sum(x * x, axis=0) / n_cols
        rstd = 1.0 / tl.sqrt(mean_sq + eps)
        if LATE_W:
            w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        # Long rows: sum of squares, then normalize (x read twice).
        row = tl.program_id(0)
        x_row = x_ptr + row * x_row_stride
        y_row = y_ptr + row * y_row_stride
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            mask = cols < n_cols
            x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
            acc += x * x
        mean_sq = tl.sum(acc, axis=0) / n_cols
        rstd = 1.0 / tl.sqrt(mean_sq + eps)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            mask = cols < n_cols
            x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            y = x * rstd * w
            tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch_params(n_cols):
    """(BLOCK, num_warps, one pass, rows per program, weight after the reduction) for rows of `n_cols` columns."""
    if n_cols <= ONE_PASS_MAX_COLS:
        block = triton.next_power_of_2(max(n_cols, 1))
        warps = WARPS_BY_BLOCK.get(block, max(1, min(16, block // COLS_PER_WARP)))
        return block, warps, True, ROWS_BY_BLOCK.get(block, 1), LATE_W_BY_BLOCK.get(block, 0)
    return LONG_ROW_BLOCK, LONG_ROW_WARPS, False, 1, 0


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm of `x` (rows, hidden) with `weight` (hidden,); returns a new tensor like `x`."""
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    y = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    block, warps, one_pass, rows, late_w = _launch_params(n_cols)
    rmsnorm_kernel[(triton.cdiv(n_rows, rows),)](x2, weight, y, n_rows, n_cols, x2.stride(0), y.stride(0), eps,
                                                 BLOCK=block, ONE_PASS=one_pass, ROWS=rows, LATE_W=bool(late_w),
                                                 num_warps=warps)
    return y.reshape(x.shape)
