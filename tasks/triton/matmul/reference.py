"""PyTorch reference and input builder for the matmul task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (a, b) for `config` = {M, N, K, dtype}: a (M, K) ~ N(0, 1) and b (K, N) ~ N(0, 1) / sqrt(K) (so C is
    ~ N(0, 1) whatever K), drawn on the CPU from a seeded generator, then moved to `device` in `dtype`."""
    dtype = getattr(torch, config["dtype"])
    M, N, K = config["M"], config["N"], config["K"]
    gen = torch.Generator(device="cpu").manual_seed(seed)
    a = torch.randn(M, K, generator=gen, dtype=torch.float32)
    b = torch.randn(K, N, generator=gen, dtype=torch.float32) / K ** 0.5
    return a.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype)


def matmul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b of the (fp16/bf16) inputs upcast to fp32, in fp32."""
    return a.float() @ b.float()
