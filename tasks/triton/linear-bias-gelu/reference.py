"""PyTorch reference and input builder for the linear-bias-gelu task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x, weight, bias) for `config` = {M, N, K, dtype}: x (M, K) ~ N(0, 1), weight (N, K) ~ N(0, 1) /
    sqrt(K) (so x W^T ~ N(0, 1)), bias (N,) ~ 0.5 N(0, 1); drawn on the CPU from a seeded generator, then moved to
    `device` in `dtype`."""
    dtype = getattr(torch, config["dtype"])
    M, N, K = config["M"], config["N"], config["K"]
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(M, K, generator=gen, dtype=torch.float32)
    w = torch.randn(N, K, generator=gen, dtype=torch.float32) / K ** 0.5
    b = 0.5 * torch.randn(N, generator=gen, dtype=torch.float32)
    return x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype)


def linear_bias_gelu_reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Exact GELU of F.linear(x, weight, bias) on the inputs upcast to fp32, in fp32."""
    return torch.nn.functional.gelu(torch.nn.functional.linear(x.float(), weight.float(), bias.float()))
