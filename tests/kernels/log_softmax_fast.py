"""A known-faster kernel.py for triton-log-softmax (untimed here: see tests/test_task_suite.py).

Same semantics as the task's baseline. Each row is split over programs in chunks of 4096: a first kernel writes
each chunk's (max, sum of exponentials), a second combines a row's partials into the log-sum-exp and writes its
chunk. Two reads of x instead of three, and rows x chunks programs instead of rows, so a batch of 1-64
vocabulary-sized rows fills the GPU. Expected >= 1.2x on an H200; not yet measured.
"""
import torch
import triton
import triton.language as tl

CHUNK = 4096


@triton.jit
def lse_partial_kernel(x_ptr, m_ptr, s_ptr, n_cols, x_row_stride, n_chunks, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1)
    cols = c * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    tl.store(m_ptr + row * n_chunks + c, m)
    tl.store(s_ptr + row * n_chunks + c, tl.sum(tl.exp(x - m), axis=0))


@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, m_ptr, s_ptr, n_cols, x_row_stride, y_row_stride, n_chunks,
                       CHUNK: tl.constexpr, BLOCK_C: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1)
    k = tl.arange(0, BLOCK_C)
    km = k < n_chunks
    ms = tl.load(m_ptr + row * n_chunks + k, mask=km, other=float("-inf"))
    ss = tl.load(s_ptr + row * n_chunks + k, mask=km, other=0.0)
    m = tl.max(ms, axis=0)
    lse = m + tl.log(tl.sum(ss * tl.exp(ms - m), axis=0))
    cols = c * CHUNK + tl.arange(0, CHUNK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * y_row_stride + cols, x - lse, mask=mask)


def log_softmax(x: torch.Tensor) -> torch.Tensor:
    """Log-softmax of x (rows, cols) over the last dimension; returns a new fp32 tensor of x's shape."""
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    n_rows, n_cols = x2.shape
    y = torch.empty((n_rows, n_cols), dtype=torch.float32, device=x.device)
    n_chunks = triton.cdiv(n_cols, CHUNK)
    m = torch.empty((n_rows, n_chunks), dtype=torch.float32, device=x.device)
    s = torch.empty((n_rows, n_chunks), dtype=torch.float32, device=x.device)
    grid = (n_rows, n_chunks)
    lse_partial_kernel[grid](x2, m, s, n_cols, x2.stride(0), n_chunks, CHUNK=CHUNK, num_warps=8)
    log_softmax_kernel[grid](x2, y, m, s, n_cols, x2.stride(0), y.stride(0), n_chunks, CHUNK=CHUNK,
                             BLOCK_C=triton.next_power_of_2(n_chunks), num_warps=8)
    return y.reshape(x.shape)
