"""A known-faster kernel.py for triton-paged-attention-decode (untimed here: see tests/test_task_suite.py).

Same semantics as the task's baseline. One program per (sequence, kv head, context split) handles the whole group
of query heads sharing that kv head as a [group, head_dim] tile, so each cached key and value is read once instead
of heads / kv_heads times; the context is split over programs (flash-decoding) so that a few long sequences still
fill the GPU, and a small second kernel combines the splits' (max, sum, output) partials. Expected >= 1.2x on an
H200; not yet measured.
"""
import torch
import triton
import triton.language as tl

TARGET_PROGRAMS = 528


@triton.jit
def paged_attention_split_kernel(q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr,
                                 m_ptr, l_ptr, acc_ptr, scale, group, head_dim, block_size, max_blocks,
                                 pages_per_split, n_splits, kv_heads,
                                 sq_s, sq_h, sk_b, sk_t, sk_h, sv_b, sv_t, sv_h,
                                 BLOCK_G: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    s = tl.program_id(0)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    seq_len = tl.load(seq_lens_ptr + s)
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, BLOCK_D)
    offs_t = tl.arange(0, BLOCK_T)
    g_mask = offs_g < group
    d_mask = offs_d < head_dim
    q = tl.load(q_ptr + s * sq_s + (kvh * group + offs_g)[:, None] * sq_h + offs_d[None, :],
                mask=g_mask[:, None] & d_mask[None, :], other=0.0).to(tl.float32)
    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], dtype=tl.float32)
    first = split * pages_per_split
    last = tl.minimum(first + pages_per_split, tl.cdiv(seq_len, block_size))
    for page in range(first, last):
        blk = tl.load(block_tables_ptr + s * max_blocks + page).to(tl.int64)
        tok = page * block_size + offs_t
        t_mask = (offs_t < block_size) & (tok < seq_len)
        mask2 = t_mask[:, None] & d_mask[None, :]
        k = tl.load(k_cache_ptr + blk * sk_b + offs_t[:, None] * sk_t + kvh * sk_h + offs_d[None, :], mask=mask2,
                    other=0.0).to(tl.float32)
        scores = tl.sum(q[:, None, :] * k[None, :, :], axis=2) * scale
        scores = tl.where(t_mask[None, :], scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(scores - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_cache_ptr + blk * sv_b + offs_t[:, None] * sv_t + kvh * sv_h + offs_d[None, :], mask=mask2,
                    other=0.0).to(tl.float32)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        m_i = m_new
    base = ((s * kv_heads + kvh) * n_splits + split) * BLOCK_G
    tl.store(m_ptr + base + offs_g, m_i)
    tl.store(l_ptr + base + offs_g, l_i)
    tl.store(acc_ptr + (base + offs_g)[:, None] * BLOCK_D + offs_d[None, :], acc)


@triton.jit
def paged_attention_reduce_kernel(m_ptr, l_ptr, acc_ptr, out_ptr, group, head_dim, n_splits, kv_heads, so_s, so_h,
                                  BLOCK_S: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_D: tl.constexpr):
    s = tl.program_id(0)
    h = tl.program_id(1)
    kvh = h // group
    g = h % group
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    s_mask = offs_s < n_splits
    idx = ((s * kv_heads + kvh) * n_splits + offs_s) * BLOCK_G + g
    ms = tl.load(m_ptr + idx, mask=s_mask, other=float("-inf"))
    ls = tl.load(l_ptr + idx, mask=s_mask, other=0.0)
    m = tl.max(ms, axis=0)
    w = tl.where(s_mask, tl.exp(ms - m), 0.0)
    total = tl.sum(ls * w, axis=0)
    accs = tl.load(acc_ptr + idx[:, None] * BLOCK_D + offs_d[None, :], mask=s_mask[:, None], other=0.0)
    out = tl.sum(accs * w[:, None], axis=0) / total
    tl.store(out_ptr + s * so_s + h * so_h + offs_d, out.to(out_ptr.dtype.element_ty), mask=offs_d < head_dim)


def paged_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                    block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """Decode attention: query (num_seqs, heads, head_dim); caches (num_blocks, block_size, kv_heads, head_dim);
    int32 block_tables (num_seqs, max_blocks) and seq_lens (num_seqs,). Returns a new tensor like query."""
    num_seqs, heads, head_dim = query.shape
    block_size, kv_heads = key_cache.shape[1], key_cache.shape[2]
    group = heads // kv_heads
    max_blocks = block_tables.shape[1]
    n_splits = max(1, min(max_blocks, triton.cdiv(TARGET_PROGRAMS, num_seqs * kv_heads)))
    pages_per_split = triton.cdiv(max_blocks, n_splits)
    n_splits = triton.cdiv(max_blocks, pages_per_split)
    block_g = max(2, triton.next_power_of_2(group))
    block_d = triton.next_power_of_2(head_dim)
    m = torch.empty((num_seqs, kv_heads, n_splits, block_g), dtype=torch.float32, device=query.device)
    l = torch.empty_like(m)
    acc = torch.empty((num_seqs, kv_heads, n_splits, block_g, block_d), dtype=torch.float32, device=query.device)
    out = torch.empty_like(query)
    paged_attention_split_kernel[(num_seqs, kv_heads, n_splits)](
        query, key_cache, value_cache, block_tables, seq_lens, m, l, acc, scale, group, head_dim, block_size,
        max_blocks, pages_per_split, n_splits, kv_heads, query.stride(0), query.stride(1),
        key_cache.stride(0), key_cache.stride(1), key_cache.stride(2),
        value_cache.stride(0), value_cache.stride(1), value_cache.stride(2),
        BLOCK_G=block_g, BLOCK_T=triton.next_power_of_2(block_size), BLOCK_D=block_d, num_warps=8)
    paged_attention_reduce_kernel[(num_seqs, heads)](
        m, l, acc, out, group, head_dim, n_splits, kv_heads, out.stride(0), out.stride(1),
        BLOCK_S=max(2, triton.next_power_of_2(n_splits)), BLOCK_G=block_g, BLOCK_D=block_d, num_warps=4)
    return out
