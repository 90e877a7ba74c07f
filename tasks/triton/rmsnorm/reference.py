"""PyTorch reference and input builder for the rmsnorm task.

`make_inputs(config, seed, device)` builds the kernel's arguments for one
config; `rmsnorm_reference(*inputs)` computes the expected output in fp32.
"""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x, weight, eps) for `config` = {rows, hidden, dtype}.

    x: (rows, hidden), weight: (hidden,), both of `dtype` on `device`;
    values from a seeded normal distribution (never zeros), eps = 1e-6.
    """
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(config["rows"], config["hidden"], generator=gen, dtype=torch.float32)
    w = 1.0 + 0.1 * torch.randn(config["hidden"], generator=gen, dtype=torch.float32)
    return x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype), 1e-6


def rmsnorm_reference(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """y = x / sqrt(mean(x^2, -1) + eps) * weight, computed in fp32, returned as fp32."""
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return xf * rstd * weight.float()
