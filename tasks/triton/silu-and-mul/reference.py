"""PyTorch reference and input builder for the silu-and-mul task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x,) for `config` = {tokens, d, dtype}: x of shape (tokens, 2 * d) ~ N(0, 1) (never zeros), drawn on
    the CPU from a seeded generator, then moved to `device` in `dtype`."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(config["tokens"], 2 * config["d"], generator=gen, dtype=torch.float32)
    return (x.to(device=device, dtype=dtype),)


def silu_and_mul_reference(x: torch.Tensor) -> torch.Tensor:
    """silu(x[:, :d]) * x[:, d:] in fp32, returned as fp32."""
    d = x.shape[-1] // 2
    xf = x.float()
    return torch.nn.functional.silu(xf[..., :d]) * xf[..., d:]
