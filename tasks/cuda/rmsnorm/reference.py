"""The PyTorch module this task replaces, its fp32 reference and the input builder (cuda rmsnorm, torch2cuda).

`RMSNorm` is the module as a Llama-family model writes it; binding.cpp's baseline runs the same operations through
ATen. `make_inputs(config, seed, device)` builds the entry point's arguments for one config;
`rmsnorm_reference(*inputs)` computes the expected output in fp32.
"""
import torch


class RMSNorm(torch.nn.Module):
    """y = weight * (x / sqrt(mean(x^2, -1) + eps)), the statistics in fp32 and the normalized x rounded to x's dtype
    before the weight multiplies it (as Llama's LlamaRMSNorm)."""

    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        variance = xf.pow(2).mean(-1, keepdim=True)
        return self.weight * (xf * torch.rsqrt(variance + self.eps)).to(x.dtype)


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x, weight, eps) for `config` = {rows, hidden, dtype}: x (rows, hidden) ~ N(0, 1) and the module's
    weight (hidden,) ~ 1 + 0.1 N(0, 1), both contiguous, drawn on the CPU from a seeded generator, then moved to
    `device` in `dtype`; eps = 1e-6 (a float)."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(config["rows"], config["hidden"], generator=gen, dtype=torch.float32)
    w = 1.0 + 0.1 * torch.randn(config["hidden"], generator=gen, dtype=torch.float32)
    return x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype), 1e-6


def rmsnorm_reference(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """`RMSNorm` with `weight`, run on fp32 copies of the inputs (no intermediate rounding), returned as fp32."""
    module = RMSNorm(x.shape[-1], eps).to(x.device)
    with torch.no_grad():
        module.weight.copy_(weight.float())
        return module(x.float())
