"""PyTorch reference and input builder for the bias-gelu task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x, bias) for `config` = {tokens, hidden, dtype}: x (tokens, hidden) ~ N(0, 1) and bias (hidden,)
    ~ 0.5 N(0, 1), drawn on the CPU from a seeded generator (never zeros), then moved to `device` in `dtype`."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(config["tokens"], config["hidden"], generator=gen, dtype=torch.float32)
    b = 0.5 * torch.randn(config["hidden"], generator=gen, dtype=torch.float32)
    return x.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype)


def bias_gelu_reference(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Exact (erf) GELU of x + bias in fp32, returned as fp32."""
    return torch.nn.functional.gelu(x.float() + bias.float())
