"""PyTorch reference and input builder for the topk-softmax task (MoE routing)."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (gating_logits, top_k) for `config` = {tokens, experts, top_k, dtype}: router logits (tokens, experts)
    ~ 2 N(0, 1) in `dtype`, drawn on the CPU from a seeded generator, then moved to `device`."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    logits = 2.0 * torch.randn(config["tokens"], config["experts"], generator=gen, dtype=torch.float32)
    return logits.to(device=device, dtype=dtype), config["top_k"]


def topk_softmax_reference(gating_logits: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(weights, ids): the top_k of softmax(logits) in fp32, descending, and their int32 expert ids; among equal
    probabilities (tied fp16/bf16 logits are common) the smaller expert id is taken first (a stable sort)."""
    p = torch.softmax(gating_logits.float(), dim=-1)
    w, i = torch.sort(p, dim=-1, descending=True, stable=True)
    return w[:, :top_k].contiguous(), i[:, :top_k].to(torch.int32)
