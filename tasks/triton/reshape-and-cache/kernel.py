"""KV-cache write (vLLM's reshape_and_cache_flash), as a Triton kernel (baseline).

For each token t with slot s = slot_mapping[t] >= 0: key_cache[s // block_size, s % block_size] = key[t] and
value_cache[...] = value[t] (all kv heads), in place. Tokens with slot -1 (padding) are skipped.

This is the task's honest, unoptimized baseline: one program per (token, kv head), each copying one head_dim
vector of the key and one of the value. Edit this file to make it faster; keep `reshape_and_cache`'s signature
and semantics (the caches are written in place; nothing is returned).
"""
import torch
import triton
import triton.language as tl

NUM_WARPS = 1


@triton.jit
def reshape_and_cache_kernel(key_ptr, value_ptr, key_cache_ptr, value_cache_ptr, slot_ptr, head_dim, block_size,
                             key_stride_t, key_stride_h, value_stride_t, value_stride_h,
                             kc_stride_b, kc_stride_s, kc_stride_h, vc_stride_b, vc_stride_s, vc_stride_h,
                             BLOCK_D: tl.constexpr):
    t = tl.program_id(0)
    h = tl.program_id(1)
    slot = tl.load(slot_ptr + t)
    if slot >= 0:
        blk = slot // block_size
        off = slot % block_size
        d = tl.arange(0, BLOCK_D)
        mask = d < head_dim
        k = tl.load(key_ptr + t * key_stride_t + h * key_stride_h + d, mask=mask)
        v = tl.load(value_ptr + t * value_stride_t + h * value_stride_h + d, mask=mask)
        tl.store(key_cache_ptr + blk * kc_stride_b + off * kc_stride_s + h * kc_stride_h + d, k, mask=mask)
        tl.store(value_cache_ptr + blk * vc_stride_b + off * vc_stride_s + h * vc_stride_h + d, v, mask=mask)


def reshape_and_cache(key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                      slot_mapping: torch.Tensor) -> None:
    """Write key and value (tokens, kv_heads, head_dim) into the paged caches (num_blocks, block_size, kv_heads,
    head_dim) at the int64 slots `slot_mapping` (tokens,); slot -1 is skipped. In place; returns None."""
    n_tokens, n_heads, head_dim = key.shape
    block_size = key_cache.shape[1]
    grid = (n_tokens, n_heads)
    reshape_and_cache_kernel[grid](
        key, value, key_cache, value_cache, slot_mapping, head_dim, block_size,
        key.stride(0), key.stride(1), value.stride(0), value.stride(1),
        key_cache.stride(0), key_cache.stride(1), key_cache.stride(2),
        value_cache.stride(0), value_cache.stride(1), value_cache.stride(2),
        BLOCK_D=triton.next_power_of_2(head_dim), num_warps=NUM_WARPS)
