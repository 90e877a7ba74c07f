"""PyTorch reference and input builder for the argmax-sampling task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (logits,) for `config` = {rows, vocab, dtype}: logits (rows, vocab) ~ 3 N(0, 1) in `dtype`, drawn on
    the CPU from a seeded generator, then moved to `device`. In bf16 and fp16, ties at the maximum occur."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    logits = 3.0 * torch.randn(config["rows"], config["vocab"], generator=gen, dtype=torch.float32)
    return (logits.to(device=device, dtype=dtype),)


def argmax_sampling_reference(logits: torch.Tensor) -> torch.Tensor:
    """The first index of each row's maximum, int64 (computed with an explicit rule rather than relying on
    torch.argmax's tie-breaking)."""
    x = logits.float()
    m = x.amax(dim=-1, keepdim=True)
    idx = torch.arange(x.shape[-1], dtype=torch.int64, device=x.device).expand_as(x)
    return torch.where(x == m, idx, x.shape[-1]).amin(dim=-1)
