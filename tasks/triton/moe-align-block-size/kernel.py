"""MoE token alignment to expert blocks (vLLM's moe_align_block_size), as Triton kernels (baseline).

For routed expert ids topk_ids (tokens, top_k), flattened to numel = tokens * top_k entries: entry i goes to expert
e = topk_ids.flat[i]. Each expert's entries are laid out contiguously in sorted_token_ids (in increasing i: a
stable sort), each expert's segment padded with the sentinel numel to a multiple of block_size, experts in order;
expert_ids[b] is the expert of block b. The tails past the last padded segment hold numel and -1 respectively.

This is the task's honest, unoptimized baseline, as vLLM's own Triton version: four launches (per-program
histograms of a chunk of entries, a prefix over programs, a serial prefix over experts for the padded offsets, and
a serial scatter per chunk), with one program per expert and scalar loops throughout. Edit this file to make it
faster; keep `moe_align_block_size`'s signature and semantics.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def count_kernel(topk_ids_ptr, cnts_ptr, num_experts, numel, per_program):
    pid = tl.program_id(0)
    start = pid * per_program
    row = (pid + 1) * num_experts
    for i in range(start, tl.minimum(start + per_program, numel)):
        e = tl.load(topk_ids_ptr + i)
        c = tl.load(cnts_ptr + row + e)
        tl.store(cnts_ptr + row + e, c + 1)


@triton.jit
def prefix_programs_kernel(cnts_ptr, num_experts):
    e = tl.program_id(0)
    total = 0
    for i in range(1, num_experts + 1):
        total += tl.load(cnts_ptr + i * num_experts + e)
        tl.store(cnts_ptr + i * num_experts + e, total)


@triton.jit
def padded_offsets_kernel(cnts_ptr, cumsum_ptr, num_experts, block_size):
    total = 0
    last = num_experts * num_experts
    for e in range(0, num_experts):
        c = tl.load(cnts_ptr + last + e)
        total += tl.cdiv(c, block_size) * block_size
        tl.store(cumsum_ptr + e + 1, total)


@triton.jit
def scatter_kernel(topk_ids_ptr, sorted_ptr, expert_ids_ptr, cnts_ptr, cumsum_ptr, num_experts, block_size, numel,
                   per_program):
    pid = tl.program_id(0)
    seg_start = tl.load(cumsum_ptr + pid)
    seg_end = tl.load(cumsum_ptr + pid + 1)
    for i in range(seg_start, seg_end, block_size):
        tl.store(expert_ids_ptr + i // block_size, pid)
    start = pid * per_program
    row = pid * num_experts
    for i in range(start, tl.minimum(start + per_program, numel)):
        e = tl.load(topk_ids_ptr + i)
        c = tl.load(cnts_ptr + row + e)
        tl.store(sorted_ptr + tl.load(cumsum_ptr + e) + c, i)
        tl.store(cnts_ptr + row + e, c + 1)


def moe_align_block_size(topk_ids: torch.Tensor, num_experts: int, block_size: int
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """(sorted_token_ids, expert_ids) for int32 topk_ids (tokens, top_k): sorted_token_ids, int32, of length
    numel + num_experts * (block_size - 1); expert_ids, int32, one per block of that length."""
    numel = topk_ids.numel()
    max_padded = numel + num_experts * (block_size - 1)
    sorted_ids = torch.full((max_padded,), numel, dtype=torch.int32, device=topk_ids.device)
    expert_ids = torch.full((triton.cdiv(max_padded, block_size),), -1, dtype=torch.int32, device=topk_ids.device)
    cnts = torch.zeros((num_experts + 1, num_experts), dtype=torch.int32, device=topk_ids.device)
    cumsum = torch.zeros((num_experts + 1,), dtype=torch.int32, device=topk_ids.device)
    per_program = triton.cdiv(numel, num_experts)
    flat = topk_ids.reshape(-1)
    count_kernel[(num_experts,)](flat, cnts, num_experts, numel, per_program)
    prefix_programs_kernel[(num_experts,)](cnts, num_experts)
    padded_offsets_kernel[(1,)](cnts, cumsum, num_experts, block_size)
    scatter_kernel[(num_experts,)](flat, sorted_ids, expert_ids, cnts, cumsum, num_experts, block_size, numel,
                                   per_program)
    return sorted_ids, expert_ids
