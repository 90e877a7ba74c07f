"""PyTorch reference and input builder for the moe-align-block-size task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (topk_ids, num_experts, block_size) for `config` = {tokens, experts, top_k, block_size, dtype}:
    topk_ids, int32 (tokens, top_k), each token's top_k distinct experts drawn with a skew (expert e has weight
    1 / (1 + e % 7), so segments differ in length), from a seeded generator on the CPU, then moved to `device`."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    e = config["experts"]
    weights = 1.0 / (1.0 + (torch.arange(e) % 7).float())
    ids = torch.multinomial(weights.expand(config["tokens"], e), config["top_k"], replacement=False, generator=gen)
    return ids.to(device=device, dtype=torch.int32), e, config["block_size"]


def moe_align_block_size_reference(topk_ids: torch.Tensor, num_experts: int, block_size: int) -> tuple:
    """(sorted_token_ids, expert_ids), int32: a stable counting sort of the flattened ids by expert, each expert's
    segment padded with numel to a multiple of block_size; tails numel and -1."""
    flat = topk_ids.reshape(-1).long()
    numel = flat.numel()
    max_padded = numel + num_experts * (block_size - 1)
    counts = torch.bincount(flat, minlength=num_experts)
    padded = (counts + block_size - 1) // block_size * block_size
    padded_start = torch.cumsum(padded, 0) - padded
    start = torch.cumsum(counts, 0) - counts
    order = torch.sort(flat, stable=True).indices
    experts = flat[order]
    pos = padded_start[experts] + torch.arange(numel, device=flat.device) - start[experts]
    sorted_ids = torch.full((max_padded,), numel, dtype=torch.int32, device=flat.device)
    sorted_ids[pos] = order.to(torch.int32)
    n_blocks = (max_padded + block_size - 1) // block_size
    expert_ids = torch.full((n_blocks,), -1, dtype=torch.int32, device=flat.device)
    used = torch.repeat_interleave(torch.arange(num_experts, device=flat.device), padded // block_size).to(torch.int32)
    expert_ids[: used.numel()] = used
    return sorted_ids, expert_ids
