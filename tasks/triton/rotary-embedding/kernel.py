"""Rotary position embedding (NeoX style, as vLLM's rotary_embedding), as a Triton kernel (baseline).

For each token t at position p = positions[t] and each head: with x1 = x[:half], x2 = x[half:] and
cos, sin = cos_sin_cache[p, :half], cos_sin_cache[p, half:],
out = concat(x1 * cos - x2 * sin, x2 * cos + x1 * sin), computed in fp32, for the query and the key heads.

This is the task's honest, unoptimized baseline: one program per (token, head) over the query heads and then the
key heads, each loading its token's cos and sin again. Edit this file to make it faster; keep
`rotary_embedding`'s signature and semantics.
"""
import torch
import triton
import triton.language as tl

NUM_WARPS = 1


@triton.jit
def rotary_kernel(pos_ptr, q_ptr, k_ptr, cache_ptr, q_out_ptr, k_out_ptr, n_q_heads, head_dim,
                  q_stride_t, k_stride_t, qo_stride_t, ko_stride_t, cache_stride, HALF: tl.constexpr):
    t = tl.program_id(0)
    h = tl.program_id(1)
    half = head_dim // 2
    pos = tl.load(pos_ptr + t)
    d = tl.arange(0, HALF)
    mask = d < half
    cos = tl.load(cache_ptr + pos * cache_stride + d, mask=mask, other=0.0).to(tl.float32)
    sin = tl.load(cache_ptr + pos * cache_stride + half + d, mask=mask, other=0.0).to(tl.float32)
    if h < n_q_heads:
        src = q_ptr + t * q_stride_t + h * head_dim
        dst = q_out_ptr + t * qo_stride_t + h * head_dim
    else:
        src = k_ptr + t * k_stride_t + (h - n_q_heads) * head_dim
        dst = k_out_ptr + t * ko_stride_t + (h - n_q_heads) * head_dim
    x1 = tl.load(src + d, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(src + half + d, mask=mask, other=0.0).to(tl.float32)
    o1 = x1 * cos - x2 * sin
    o2 = x2 * cos + x1 * sin
    tl.store(dst + d, o1.to(q_out_ptr.dtype.element_ty), mask=mask)
    tl.store(dst + half + d, o2.to(q_out_ptr.dtype.element_ty), mask=mask)


def rotary_embedding(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, cos_sin_cache: torch.Tensor,
                     head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate query (tokens, heads * head_dim) and key (tokens, kv_heads * head_dim) by the cos/sin rows of
    cos_sin_cache (max_position, head_dim) at int64 `positions` (tokens,); returns two new tensors like query, key."""
    n_tokens = query.shape[0]
    n_q_heads = query.shape[1] // head_dim
    n_k_heads = key.shape[1] // head_dim
    q_out = torch.empty_like(query)
    k_out = torch.empty_like(key)
    grid = (n_tokens, n_q_heads + n_k_heads)
    rotary_kernel[grid](positions, query, key, cos_sin_cache, q_out, k_out, n_q_heads, head_dim,
                        query.stride(0), key.stride(0), q_out.stride(0), k_out.stride(0), cos_sin_cache.stride(0),
                        HALF=triton.next_power_of_2(head_dim // 2), num_warps=NUM_WARPS)
    return q_out, k_out
