"""PyTorch reference and input builder for the softmax task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x,) for `config` = {rows, cols, dtype}: x (rows, cols) ~ 3 + 2 N(0, 1) (logits with an offset, so
    that a kernel without the max subtraction still runs but a wrong one is visible), drawn on the CPU from a
    seeded generator, then moved to `device` in `dtype`."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = 3.0 + 2.0 * torch.randn(config["rows"], config["cols"], generator=gen, dtype=torch.float32)
    return (x.to(device=device, dtype=dtype),)


def softmax_reference(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension in fp32, returned as fp32."""
    return torch.softmax(x.float(), dim=-1)
