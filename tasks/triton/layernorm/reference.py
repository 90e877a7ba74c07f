"""PyTorch reference and input builder for the layernorm task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x, weight, bias, eps) for `config` = {rows, hidden, dtype}: x (rows, hidden) ~ 1 + 2 N(0, 1) (a
    non-zero mean, so that a kernel skipping the centring fails), weight ~ 1 + 0.1 N(0, 1), bias ~ 0.1 N(0, 1);
    drawn on the CPU from a seeded generator, then moved to `device` in `dtype`; eps = 1e-5."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = 1.0 + 2.0 * torch.randn(config["rows"], config["hidden"], generator=gen, dtype=torch.float32)
    w = 1.0 + 0.1 * torch.randn(config["hidden"], generator=gen, dtype=torch.float32)
    b = 0.1 * torch.randn(config["hidden"], generator=gen, dtype=torch.float32)
    return (x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype),
            1e-5)


def layernorm_reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """torch's layer_norm over the last dimension in fp32, returned as fp32."""
    return torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), weight.float(), bias.float(), eps)
