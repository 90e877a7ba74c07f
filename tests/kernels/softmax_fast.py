"""A known-faster kernel.py for triton-softmax (untimed here: see tests/test_task_suite.py).

Same semantics as the task's baseline. Rows up to 8192 columns are read once and kept in registers (block = the
row's next power of two, warps from the block). Longer rows (vocabularies) are split over programs: a first kernel
writes each chunk's (max, sum of exponentials), a second combines a row's partials and normalizes its chunk, so a
batch of 8 rows still fills the GPU. Expected >= 1.2x on an H200; not yet measured.
"""
import torch
import triton
import triton.language as tl

CHUNK = 4096


@triton.jit
def softmax_row_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_partial_kernel(x_ptr, m_ptr, s_ptr, n_cols, x_row_stride, n_chunks, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1)
    cols = c * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    tl.store(m_ptr + row * n_chunks + c, m)
    tl.store(s_ptr + row * n_chunks + c, tl.sum(tl.exp(x - m), axis=0))


@triton.jit
def softmax_finish_kernel(x_ptr, y_ptr, m_ptr, s_ptr, n_cols, x_row_stride, y_row_stride, n_chunks,
                          CHUNK: tl.constexpr, BLOCK_C: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1)
    k = tl.arange(0, BLOCK_C)
    km = k < n_chunks
    ms = tl.load(m_ptr + row * n_chunks + k, mask=km, other=float("-inf"))
    ss = tl.load(s_ptr + row * n_chunks + k, mask=km, other=0.0)
    m = tl.max(ms, axis=0)
    denom = tl.sum(ss * tl.exp(ms - m), axis=0)
    cols = c * CHUNK + tl.arange(0, CHUNK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=float("-inf")).to(tl.float32)
    y = tl.exp(x - m) / denom
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax of x (rows, cols) over the last dimension; returns a new tensor like x."""
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    y = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    if n_cols <= 8192:
        block = triton.next_power_of_2(n_cols)
        warps = 4 if block <= 1024 else (8 if block <= 4096 else 16)
        softmax_row_kernel[(n_rows,)](x2, y, n_cols, x2.stride(0), y.stride(0), BLOCK=block, num_warps=warps)
    else:
        n_chunks = triton.cdiv(n_cols, CHUNK)
        m = torch.empty((n_rows, n_chunks), dtype=torch.float32, device=x.device)
        s = torch.empty((n_rows, n_chunks), dtype=torch.float32, device=x.device)
        grid = (n_rows, n_chunks)
        softmax_partial_kernel[grid](x2, m, s, n_cols, x2.stride(0), n_chunks, CHUNK=CHUNK, num_warps=8)
        softmax_finish_kernel[grid](x2, y, m, s, n_cols, x2.stride(0), y.stride(0), n_chunks, CHUNK=CHUNK,
                                    BLOCK_C=triton.next_power_of_2(n_chunks), num_warps=8)
    return y.reshape(x.shape)
