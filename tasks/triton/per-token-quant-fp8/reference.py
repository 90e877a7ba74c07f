"""PyTorch reference and input builder for the per-token-quant-fp8 task."""
import torch

FP8_MAX = 448.0


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x,) for `config` = {tokens, hidden, dtype}: activations x (tokens, hidden) ~ N(0, 1) with each row
    scaled by a factor in [0.5, 4] (tokens differ in range, so a shared scale fails), drawn on the CPU from a seeded
    generator, then moved to `device` in `dtype`."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(config["tokens"], config["hidden"], generator=gen, dtype=torch.float32)
    x = x * (0.5 + 3.5 * torch.rand(config["tokens"], 1, generator=gen))
    return (x.to(device=device, dtype=dtype),)


def per_token_quant_fp8_reference(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(q, scale): scale = max|x| / 448 per row (fp32, shape (tokens, 1)); q = x * 448 / max|x| clamped to
    [-448, 448] and rounded to float8_e4m3fn, returned as fp32 values."""
    xf = x.float()
    amax = xf.abs().amax(dim=-1, keepdim=True).clamp_min(1e-10)
    q = (xf * (FP8_MAX / amax)).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).float()
    return q, amax / FP8_MAX
