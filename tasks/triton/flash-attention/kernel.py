"""Causal flash-attention forward (prefill, grouped-query heads), as a Triton kernel (baseline).

O = softmax(Q K^T * scale + causal mask) V per (batch, head), with scale = 1 / sqrt(head_dim); query head h reads
key/value head h // (heads // kv_heads). Online softmax in fp32, P rounded to the input dtype for the P V product.

This is the task's honest, unoptimized baseline: one program per (64-query block, batch x head), key blocks of 64,
4 warps, the causal mask applied to every key block, natural exponentials. Edit this file to make it faster; keep
`flash_attention`'s signature and semantics.
"""
import torch
import triton
import triton.language as tl

BLOCK_M = 64
BLOCK_N = 64
NUM_WARPS = 4


@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, head_dim, heads, group, scale,
                           sq_b, sq_h, sq_s, sk_b, sk_h, sk_s, sv_b, sv_h, sv_s, so_b, so_h, so_s,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // heads
    h = bh % heads
    kvh = h // group
    q_base = q_ptr + b.to(tl.int64) * sq_b + h.to(tl.int64) * sq_h
    k_base = k_ptr + b.to(tl.int64) * sk_b + kvh.to(tl.int64) * sk_h
    v_base = v_ptr + b.to(tl.int64) * sv_b + kvh.to(tl.int64) * sv_h
    o_base = o_ptr + b.to(tl.int64) * so_b + h.to(tl.int64) * so_h
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    d_mask = offs_d < head_dim
    q = tl.load(q_base + offs_m[:, None] * sq_s + offs_d[None, :], mask=(offs_m[:, None] < seq) & d_mask[None, :],
                other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    hi = (pid_m + 1) * BLOCK_M  # causal: keys past the block's last query are never needed
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = (offs_n[:, None] < seq) & d_mask[None, :]
        k = tl.load(k_base + offs_n[:, None] * sk_s + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        allowed = (offs_n[None, :] <= offs_m[:, None]) & (offs_n[None, :] < seq)
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + offs_n[:, None] * sv_s + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * so_s + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < seq) & d_mask[None, :])


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal attention of q (batch, heads, seq, head_dim) over k, v (batch, kv_heads, seq, head_dim); returns a
    new tensor like q."""
    batch, heads, seq, head_dim = q.shape
    kv_heads = k.shape[1]
    o = torch.empty_like(q)
    scale = 1.0 / head_dim ** 0.5
    grid = (triton.cdiv(seq, BLOCK_M), batch * heads)
    flash_attention_kernel[grid](q, k, v, o, seq, head_dim, heads, heads // kv_heads, scale,
                                 q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                                 v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2),
                                 BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=triton.next_power_of_2(head_dim),
                                 num_warps=NUM_WARPS)
    return o
