"""PyTorch reference and input builder for the cuda silu-and-mul task.

`make_inputs(config, seed, device)` builds the kernel's arguments for one config; `silu_and_mul_reference(*inputs)`
computes the expected output in fp32.
"""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x,) for `config` = {tokens, d, dtype}: x of shape (tokens, 2 * d) ~ 2 N(0, 1) (never zeros), contiguous,
    drawn on the CPU from a seeded generator, then moved to `device` in `dtype`."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = 2.0 * torch.randn(config["tokens"], 2 * config["d"], generator=gen, dtype=torch.float32)
    return (x.to(device=device, dtype=getattr(torch, config["dtype"])),)


def silu_and_mul_reference(x: torch.Tensor) -> torch.Tensor:
    """silu(x[:, :d]) * x[:, d:] in fp32, returned as fp32 of shape (tokens, d)."""
    d = x.shape[-1] // 2
    xf = x.float()
    return torch.nn.functional.silu(xf[..., :d]) * xf[..., d:]
