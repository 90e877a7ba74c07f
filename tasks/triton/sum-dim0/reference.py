"""PyTorch reference and input builder for the sum-dim0 task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x,) for `config` = {rows, cols, dtype}: x (rows, cols) ~ 0.1 + N(0, 1) (a small mean, so that
    column sums are mostly far from zero), drawn on the CPU from a seeded generator, then moved to `device`."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = 0.1 + torch.randn(config["rows"], config["cols"], generator=gen, dtype=torch.float32)
    return (x.to(device=device, dtype=dtype),)


def sum_dim0_reference(x: torch.Tensor) -> torch.Tensor:
    """Column sums in float64 (exact for any summation order), returned as fp32."""
    return x.double().sum(dim=0).float()
