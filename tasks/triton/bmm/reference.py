"""PyTorch reference and input builder for the bmm task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (a, b) for `config` = {batch, M, N, K, dtype}: a (batch, M, K) ~ N(0, 1) and b (batch, K, N) ~
    N(0, 1) / sqrt(K) (C ~ N(0, 1)), drawn on the CPU from a seeded generator, then moved to `device` in `dtype`."""
    dtype = getattr(torch, config["dtype"])
    bs, M, N, K = config["batch"], config["M"], config["N"], config["K"]
    gen = torch.Generator(device="cpu").manual_seed(seed)
    a = torch.randn(bs, M, K, generator=gen, dtype=torch.float32)
    b = torch.randn(bs, K, N, generator=gen, dtype=torch.float32) / K ** 0.5
    return a.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype)


def bmm_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """torch.bmm of the inputs upcast to fp32, in fp32."""
    return torch.bmm(a.float(), b.float())
