"""A known-faster kernel.py for triton-flash-attention (untimed here: see tests/test_task_suite.py).

Same semantics as the task's baseline. The changes are those of Triton's fused-attention tutorial: 128-query blocks
with 8 warps (64 for small head_dim), exp2 with log2(e) folded into the scale, the key loop split into the blocks
fully below the diagonal (no mask) and the diagonal blocks (masked), the last (longest) query blocks scheduled
first, and software pipelining. Expected >= 1.2x on an H200; not yet measured.
"""
import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _attend(acc, l_i, m_i, q, k_base, v_base, offs_m, offs_d, d_mask, sk_s, sv_s, seq, qk_scale, lo, hi,
            MASKED: tl.constexpr, BLOCK_N: tl.constexpr):
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = (offs_n[:, None] < seq) & d_mask[None, :]
        k = tl.load(k_base + offs_n[:, None] * sk_s + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if MASKED:
            allowed = (offs_n[None, :] <= offs_m[:, None]) & (offs_n[None, :] < seq)
            s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + offs_n[:, None] * sv_s + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, head_dim, heads, group, qk_scale,
                           sq_b, sq_h, sq_s, sk_b, sk_h, sk_s, sv_b, sv_h, sv_s, so_b, so_h, so_s,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    pid_m = tl.num_programs(0) - 1 - tl.program_id(0)  # longest query blocks first
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
    # Key blocks entirely at or below the block's first query need no mask (BLOCK_M is a multiple of BLOCK_N).
    lo_diag = pid_m * BLOCK_M
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, offs_m, offs_d, d_mask, sk_s, sv_s, seq, qk_scale,
                            0, lo_diag, False, BLOCK_N)
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, offs_m, offs_d, d_mask, sk_s, sv_s, seq, qk_scale,
                            lo_diag, lo_diag + BLOCK_M, True, BLOCK_N)
    out = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * so_s + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < seq) & d_mask[None, :])


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal attention of q (batch, heads, seq, head_dim) over k, v (batch, kv_heads, seq, head_dim); returns a
    new tensor like q."""
    batch, heads, seq, head_dim = q.shape
    kv_heads = k.shape[1]
    o = torch.empty_like(q)
    block_d = triton.next_power_of_2(head_dim)
    block_m, block_n, warps, stages = (128, 64, 8, 3) if block_d <= 128 else (64, 32, 4, 2)
    grid = (triton.cdiv(seq, block_m), batch * heads)
    flash_attention_kernel[grid](q, k, v, o, seq, head_dim, heads, heads // kv_heads, LOG2E / head_dim ** 0.5,
                                 q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                                 v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2),
                                 BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_D=block_d, num_warps=warps,
                                 num_stages=stages)
    return o
