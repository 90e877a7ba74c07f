"""A known-faster kernel.py for triton-rmsnorm-quant-int8 (untimed here: see tests/test_task_suite.py).

Same semantics as the task's baseline. Rows up to ROW_MAX columns are read once and kept in registers (block = the
row's next power of two, warps from the block) through the norm, the maximum and the quantization. Longer rows take
two reads instead of three: max|x * rstd * w| = rstd * max|x * w| (rstd > 0), so the first pass gathers both the sum
of squares and max|x * w|. Expected >= 1.2x on an H200; not yet measured.
"""
import torch
import triton
import triton.language as tl

ROW_MAX = 16384
CHUNK = 4096


@triton.jit
def _quantize(y, inv):
    v = y * inv
    v = tl.where(v >= 0, v + 0.5, v - 0.5)
    return tl.minimum(tl.maximum(v, -127.0), 127.0).to(tl.int8)


@triton.jit
def rmsnorm_quant_row_kernel(x_ptr, w_ptr, q_ptr, scale_ptr, n_cols, x_row_stride, q_row_stride, eps,
                             BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    y = x * rstd * w
    row_max = tl.maximum(tl.max(tl.abs(y), axis=0), 1e-10)
    tl.store(scale_ptr + row, row_max / 127.0)
    tl.store(q_ptr + row * q_row_stride + cols, _quantize(y, 127.0 / row_max), mask=mask)


@triton.jit
def rmsnorm_quant_long_kernel(x_ptr, w_ptr, q_ptr, scale_ptr, n_cols, x_row_stride, q_row_stride, eps,
                              CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    amax = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        acc += x * x
        amax = tl.maximum(amax, tl.abs(x * w))
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    row_max = tl.maximum(tl.max(amax, axis=0) * rstd, 1e-10)
    tl.store(scale_ptr + row, row_max / 127.0)
    inv = 127.0 / row_max
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(q_ptr + row * q_row_stride + cols, _quantize(x * rstd * w, inv), mask=mask)


def rmsnorm_quant_int8(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """RMSNorm of x (tokens, hidden) with weight (hidden,), quantized per token: returns (q int8 (tokens, hidden),
    scale fp32 (tokens, 1))."""
    if x.stride(-1) != 1:
        x = x.contiguous()
    weight = weight.contiguous()
    n_rows, n_cols = x.shape
    q = torch.empty((n_rows, n_cols), dtype=torch.int8, device=x.device)
    scale = torch.empty((n_rows, 1), dtype=torch.float32, device=x.device)
    if n_cols <= ROW_MAX:
        block = triton.next_power_of_2(n_cols)
        warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
        rmsnorm_quant_row_kernel[(n_rows,)](x, weight, q, scale, n_cols, x.stride(0), q.stride(0), eps, BLOCK=block,
                                            num_warps=warps)
    else:
        rmsnorm_quant_long_kernel[(n_rows,)](x, weight, q, scale, n_cols, x.stride(0), q.stride(0), eps, CHUNK=CHUNK,
                                             num_warps=8)
    return q, scale
