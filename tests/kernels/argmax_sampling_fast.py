"""A known-faster kernel.py for triton-argmax-sampling (untimed here: see tests/test_task_suite.py).

Same semantics as the task's baseline (ties: the smallest index). Each row is split into chunks of 4096 columns
over programs: a first kernel writes each chunk's (max, first index of the max), a second reduces a row's partials,
so a batch of 1-64 rows fills the GPU. Expected >= 1.2x on an H200 for the small-batch seen configs; not yet
measured.
"""
import torch
import triton
import triton.language as tl

CHUNK = 4096


@triton.jit
def argmax_partial_kernel(logits_ptr, m_ptr, i_ptr, n_cols, row_stride, n_chunks, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1)
    cols = c * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(logits_ptr + row * row_stride + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    idx = tl.min(tl.where(x == m, cols, n_cols), axis=0)
    tl.store(m_ptr + row * n_chunks + c, m)
    tl.store(i_ptr + row * n_chunks + c, idx)


@triton.jit
def argmax_finish_kernel(m_ptr, i_ptr, ids_ptr, n_cols, n_chunks, BLOCK_C: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    k = tl.arange(0, BLOCK_C)
    km = k < n_chunks
    ms = tl.load(m_ptr + row * n_chunks + k, mask=km, other=float("-inf"))
    idx = tl.load(i_ptr + row * n_chunks + k, mask=km, other=n_cols)
    m = tl.max(ms, axis=0)
    best = tl.min(tl.where(ms == m, idx, n_cols), axis=0)
    tl.store(ids_ptr + row, best.to(tl.int64))


def argmax_sampling(logits: torch.Tensor) -> torch.Tensor:
    """Greedy token ids of logits (rows, vocab): a new int64 tensor of shape (rows,)."""
    if logits.stride(-1) != 1:
        logits = logits.contiguous()
    n_rows, n_cols = logits.shape
    n_chunks = triton.cdiv(n_cols, CHUNK)
    m = torch.empty((n_rows, n_chunks), dtype=torch.float32, device=logits.device)
    i = torch.empty((n_rows, n_chunks), dtype=torch.int32, device=logits.device)
    ids = torch.empty((n_rows,), dtype=torch.int64, device=logits.device)
    argmax_partial_kernel[(n_rows, n_chunks)](logits, m, i, n_cols, logits.stride(0), n_chunks, CHUNK=CHUNK,
                                              num_warps=8)
    argmax_finish_kernel[(n_rows,)](m, i, ids, n_cols, n_chunks, BLOCK_C=triton.next_power_of_2(n_chunks),
                                    num_warps=1)
    return ids
