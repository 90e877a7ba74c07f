"""Paged-attention decode (one new query token per sequence over a paged KV cache), as a Triton kernel (baseline).

For each sequence s and query head h (key/value head h // (heads / kv_heads)): the keys and values of its first
seq_lens[s] tokens live in cache blocks block_tables[s, 0], block_tables[s, 1], ... (block_size tokens each);
out[s, h] = softmax(K q * scale) V, in fp32.

This is the task's honest, unoptimized baseline: one program per (sequence, query head) that walks the sequence one
cache block at a time with an online softmax, using broadcast multiply-and-sum for the dot products. Edit this file
to make it faster; keep `paged_attention`'s signature and semantics.
"""
import torch
import triton
import triton.language as tl

NUM_WARPS = 4


@triton.jit
def paged_attention_kernel(q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, out_ptr, scale,
                           heads, group, head_dim, block_size, max_blocks,
                           sq_s, sq_h, sk_b, sk_t, sk_h, sv_b, sv_t, sv_h, so_s, so_h,
                           BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    s = tl.program_id(0)
    h = tl.program_id(1)
    kvh = h // group
    seq_len = tl.load(seq_lens_ptr + s)
    offs_d = tl.arange(0, BLOCK_D)
    d_mask = offs_d < head_dim
    offs_t = tl.arange(0, BLOCK_T)
    q = tl.load(q_ptr + s * sq_s + h * sq_h + offs_d, mask=d_mask, other=0.0).to(tl.float32)
    m_i = float("-inf")
    l_i = 0.0
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    n_pages = tl.cdiv(seq_len, block_size)
    for page in range(0, n_pages):
        blk = tl.load(block_tables_ptr + s * max_blocks + page).to(tl.int64)
        tok = page * block_size + offs_t
        t_mask = (offs_t < block_size) & (tok < seq_len)
        mask2 = t_mask[:, None] & d_mask[None, :]
        k = tl.load(k_cache_ptr + blk * sk_b + offs_t[:, None] * sk_t + kvh * sk_h + offs_d[None, :], mask=mask2,
                    other=0.0).to(tl.float32)
        scores = tl.sum(k * q[None, :], axis=1) * scale
        scores = tl.where(t_mask, scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=0))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(scores - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        v = tl.load(v_cache_ptr + blk * sv_b + offs_t[:, None] * sv_t + kvh * sv_h + offs_d[None, :], mask=mask2,
                    other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m_i = m_new
    out = acc / l_i
    tl.store(out_ptr + s * so_s + h * so_h + offs_d, out.to(out_ptr.dtype.element_ty), mask=d_mask)


def paged_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                    block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """Decode attention: query (num_seqs, heads, head_dim); caches (num_blocks, block_size, kv_heads, head_dim);
    int32 block_tables (num_seqs, max_blocks) and seq_lens (num_seqs,). Returns a new tensor like query."""
    num_seqs, heads, head_dim = query.shape
    block_size, kv_heads = key_cache.shape[1], key_cache.shape[2]
    out = torch.empty_like(query)
    grid = (num_seqs, heads)
    paged_attention_kernel[grid](query, key_cache, value_cache, block_tables, seq_lens, out, scale,
                                 heads, heads // kv_heads, head_dim, block_size, block_tables.shape[1],
                                 query.stride(0), query.stride(1), key_cache.stride(0), key_cache.stride(1),
                                 key_cache.stride(2), value_cache.stride(0), value_cache.stride(1),
                                 value_cache.stride(2), out.stride(0), out.stride(1),
                                 BLOCK_T=triton.next_power_of_2(block_size), BLOCK_D=triton.next_power_of_2(head_dim),
                                 num_warps=NUM_WARPS)
    return out
