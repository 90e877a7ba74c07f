"""PyTorch reference and input builder for the log-softmax task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x,) for `config` = {rows, cols, dtype}: logits x (rows, cols) ~ 2 + 3 N(0, 1), drawn on the CPU from a
    seeded generator, then moved to `device` in `dtype`."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = 2.0 + 3.0 * torch.randn(config["rows"], config["cols"], generator=gen, dtype=torch.float32)
    return (x.to(device=device, dtype=dtype),)


def log_softmax_reference(x: torch.Tensor) -> torch.Tensor:
    """Log-softmax over the last dimension of x (upcast to fp32), in fp32."""
    return torch.log_softmax(x.float(), dim=-1)
