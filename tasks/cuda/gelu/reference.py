"""PyTorch reference and input builder for the cuda gelu task.

`make_inputs(config, seed, device)` builds the kernel's arguments for one config; `gelu_reference(*inputs)`
computes the expected output in fp32.
"""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x,) for `config` = {tokens, hidden, dtype}.

    x: (tokens, hidden) of `dtype` on `device`, contiguous; values 2 * N(0, 1), drawn on the CPU from a seeded
    generator and then moved, so every device gets the same values.
    """
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = 2.0 * torch.randn(config["tokens"], config["hidden"], generator=gen, dtype=torch.float32)
    return (x.to(device=device, dtype=getattr(torch, config["dtype"])),)


def gelu_reference(x: torch.Tensor) -> torch.Tensor:
    """y = 0.5 * x * (1 + erf(x / sqrt(2))) (exact GELU, not the tanh approximation), in fp32."""
    return torch.nn.functional.gelu(x.float())
