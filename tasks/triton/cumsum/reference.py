"""PyTorch reference and input builder for the cumsum task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x,) for `config` = {rows, cols, dtype}: x (rows, cols) ~ N(0, 1), drawn on the CPU from a seeded
    generator, then moved to `device` in `dtype`."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(config["rows"], config["cols"], generator=gen, dtype=torch.float32)
    return (x.to(device=device, dtype=dtype),)


def cumsum_reference(x: torch.Tensor) -> torch.Tensor:
    """Inclusive cumsum along the last dimension, in float64 (the exact answer for any summation order), as fp32."""
    return torch.cumsum(x.double(), dim=-1).float()
