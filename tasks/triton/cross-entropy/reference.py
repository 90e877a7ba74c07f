"""PyTorch reference and input builder for the cross-entropy task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (logits, labels) for `config` = {tokens, vocab, dtype}: logits (tokens, vocab) ~ 2 N(0, 1) in `dtype`;
    int64 labels uniform in [0, vocab), about one in eight set to -100 (ignored: padding or prompt tokens) when
    there are at least 8 tokens. Drawn on the CPU from a seeded generator, then moved to `device`."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    logits = 2.0 * torch.randn(config["tokens"], config["vocab"], generator=gen, dtype=torch.float32)
    labels = torch.randint(0, config["vocab"], (config["tokens"],), generator=gen, dtype=torch.int64)
    if config["tokens"] >= 8:
        labels[torch.randperm(config["tokens"], generator=gen)[: config["tokens"] // 8]] = -100
    return logits.to(device=device, dtype=dtype), labels.to(device)


def cross_entropy_reference(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """torch's cross_entropy on fp32 logits, reduction 'none', ignore_index -100 (loss 0 there)."""
    return torch.nn.functional.cross_entropy(logits.float(), labels, reduction="none", ignore_index=-100)
