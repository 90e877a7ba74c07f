"""PyTorch reference and input builder for the rmsnorm-quant-int8 task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x, weight, eps) for `config` = {tokens, hidden, dtype}: x (tokens, hidden) ~ N(0, 1) with each row
    scaled by a factor in [0.5, 4] (the norm removes it), weight (hidden,) ~ 1 + 0.5 N(0, 1) (so each row's maximum
    falls on different channels), both drawn on the CPU from a seeded generator, then moved to `device` in `dtype`;
    eps = 1e-6."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(config["tokens"], config["hidden"], generator=gen, dtype=torch.float32)
    x = x * (0.5 + 3.5 * torch.rand(config["tokens"], 1, generator=gen))
    w = 1.0 + 0.5 * torch.randn(config["hidden"], generator=gen, dtype=torch.float32)
    return x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype), 1e-6


def rmsnorm_quant_int8_reference(x: torch.Tensor, weight: torch.Tensor,
                                 eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """(q, scale): y = x / sqrt(mean(x^2, -1) + eps) * weight in fp32; scale = max|y| / 127 per row (fp32, shape
    (tokens, 1)); q = round(y * 127 / max|y|) in [-127, 127], returned as fp32 values (compared to the int8 output
    within 1, for rounding of ties and of the reciprocal)."""
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.float()
    amax = y.abs().amax(dim=-1, keepdim=True).clamp_min(1e-10)
    q = torch.round(y * (127.0 / amax)).clamp(-127, 127)
    return q, amax / 127.0
