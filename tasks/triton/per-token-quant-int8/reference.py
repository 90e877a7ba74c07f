"""PyTorch reference and input builder for the per-token-quant-int8 task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x,) for `config` = {tokens, hidden, dtype}: activations x (tokens, hidden) ~ N(0, 1) with each row
    scaled by a factor in [0.5, 4] (tokens differ in range, so a shared scale fails), drawn on the CPU from a seeded
    generator, then moved to `device` in `dtype`."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(config["tokens"], config["hidden"], generator=gen, dtype=torch.float32)
    x = x * (0.5 + 3.5 * torch.rand(config["tokens"], 1, generator=gen))
    return (x.to(device=device, dtype=dtype),)


def per_token_quant_int8_reference(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(q, scale): scale = max|x| / 127 per row (fp32, shape (tokens, 1)); q = round(x * 127 / max|x|) in
    [-127, 127], returned as fp32 values (compared to the int8 output within 1, for rounding of ties and of the
    reciprocal)."""
    xf = x.float()
    amax = xf.abs().amax(dim=-1, keepdim=True).clamp_min(1e-10)
    q = torch.round(xf * (127.0 / amax)).clamp(-127, 127)
    return q, amax / 127.0
