"""Dynamic per-token fp8 (e4m3) quantization (vLLM's dynamic_per_token_scaled_fp8_quant), as a Triton kernel
(baseline).

For each row (token) of x: scale = max|x| / 448 (fp8 e4m3's largest value), q = x / scale clamped to [-448, 448]
and rounded to float8_e4m3fn; returns (q, scale) with scale of shape (tokens, 1) in fp32.

This is the task's honest, unoptimized baseline: one program per row, a fixed block of 1024 columns and two
passes over the row (absolute maximum, then quantize and store). Edit this file to make it faster; keep
`per_token_quant_fp8`'s signature and semantics.
"""
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 1024
NUM_WARPS = 4
FP8_MAX = 448.0


@triton.jit
def per_token_quant_fp8_kernel(x_ptr, q_ptr, scale_ptr, n_cols, x_row_stride, q_row_stride, fp8_max,
                               BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    q_row = q_ptr + row * q_row_stride
    # Pass 1: the row's absolute maximum.
    amax = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        amax = tl.maximum(amax, tl.abs(x))
    row_max = tl.maximum(tl.max(amax, axis=0), 1e-10)
    tl.store(scale_ptr + row, row_max / fp8_max)
    inv = fp8_max / row_max
    # Pass 2: scale, clamp, round to fp8, store.
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        v = tl.minimum(tl.maximum(x * inv, -fp8_max), fp8_max)
        tl.store(q_row + cols, v.to(q_ptr.dtype.element_ty), mask=mask)


def per_token_quant_fp8(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize x (tokens, hidden) per token: returns (q float8_e4m3fn (tokens, hidden), scale fp32 (tokens, 1))."""
    if x.stride(-1) != 1:
        x = x.contiguous()
    n_rows, n_cols = x.shape
    q = torch.empty((n_rows, n_cols), dtype=torch.float8_e4m3fn, device=x.device)
    scale = torch.empty((n_rows, 1), dtype=torch.float32, device=x.device)
    per_token_quant_fp8_kernel[(n_rows,)](x, q, scale, n_cols, x.stride(0), q.stride(0), FP8_MAX, BLOCK=BLOCK_SIZE,
                                          num_warps=NUM_WARPS)
    return q, scale
