"""MoE routing: softmax over the experts, then top-k (vLLM's topk_softmax), as a Triton kernel (baseline).

For each token: p = softmax(gating_logits[t]) in fp32; weights[t] = the top_k largest p in descending order,
ids[t] = their expert ids (int32); ties go to the smaller expert id.

This is the task's honest, unoptimized baseline: one program per token; the whole expert row is held in one
block, and the top k are found by k rounds of (max, first index of the max, mask it out). Edit this file to make
it faster; keep `topk_softmax`'s signature and semantics.
"""
import torch
import triton
import triton.language as tl

NUM_WARPS = 4


@triton.jit
def topk_softmax_kernel(logits_ptr, weights_ptr, ids_ptr, n_experts, row_stride, top_k,
                        BLOCK_E: tl.constexpr):
    t = tl.program_id(0)
    e = tl.arange(0, BLOCK_E)
    mask = e < n_experts
    x = tl.load(logits_ptr + t * row_stride + e, mask=mask, other=float("-inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.where(mask, tl.exp(x), 0.0)
    p = num / tl.sum(num, axis=0)
    p = tl.where(mask, p, -1.0)
    for k in range(0, top_k):
        best = tl.max(p, axis=0)
        idx = tl.min(tl.where(p == best, e, BLOCK_E), axis=0)
        tl.store(weights_ptr + t * top_k + k, best)
        tl.store(ids_ptr + t * top_k + k, idx)
        p = tl.where(e == idx, -2.0, p)


def topk_softmax(gating_logits: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Route tokens: gating_logits (tokens, experts) -> (weights fp32 (tokens, top_k), ids int32 (tokens, top_k))."""
    if gating_logits.stride(-1) != 1:
        gating_logits = gating_logits.contiguous()
    n_tokens, n_experts = gating_logits.shape
    weights = torch.empty((n_tokens, top_k), dtype=torch.float32, device=gating_logits.device)
    ids = torch.empty((n_tokens, top_k), dtype=torch.int32, device=gating_logits.device)
    topk_softmax_kernel[(n_tokens,)](gating_logits, weights, ids, n_experts, gating_logits.stride(0), top_k,
                                     BLOCK_E=triton.next_power_of_2(n_experts), num_warps=NUM_WARPS)
    return weights, ids
