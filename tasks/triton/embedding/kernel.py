"""Embedding gather, as a Triton kernel (baseline).

out[t, :] = weight[ids[t], :] for token ids (tokens,) and an embedding table (vocab, hidden).

This is the task's honest, unoptimized baseline: one program per token that copies the row in blocks of 256
columns. Edit this file to make it faster; keep `embedding`'s signature and semantics.
"""
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 256
NUM_WARPS = 4


@triton.jit
def embedding_kernel(ids_ptr, w_ptr, out_ptr, hidden, w_row_stride, out_row_stride, BLOCK: tl.constexpr):
    t = tl.program_id(0)
    token = tl.load(ids_ptr + t).to(tl.int64)
    src = w_ptr + token * w_row_stride
    dst = out_ptr + t.to(tl.int64) * out_row_stride
    for start in range(0, hidden, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < hidden
        tl.store(dst + cols, tl.load(src + cols, mask=mask), mask=mask)


def embedding(ids: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """weight[ids] for int32 ids (tokens,) and weight (vocab, hidden); returns a new (tokens, hidden) tensor."""
    n_tokens = ids.shape[0]
    hidden = weight.shape[1]
    out = torch.empty((n_tokens, hidden), dtype=weight.dtype, device=weight.device)
    embedding_kernel[(n_tokens,)](ids, weight, out, hidden, weight.stride(0), out.stride(0), BLOCK=BLOCK_SIZE,
                                  num_warps=NUM_WARPS)
    return out
