"""PyTorch reference and input builder for the flash-attention task (causal prefill, grouped-query heads)."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (q, k, v) for `config` = {batch, heads, kv_heads, seq, head_dim, dtype}: q (batch, heads, seq,
    head_dim), k and v (batch, kv_heads, seq, head_dim), all ~ N(0, 1), contiguous, drawn on the CPU from a seeded
    generator, then moved to `device` in `dtype`."""
    dtype = getattr(torch, config["dtype"])
    b, h, kvh, s, d = (config[n] for n in ("batch", "heads", "kv_heads", "seq", "head_dim"))
    gen = torch.Generator(device="cpu").manual_seed(seed)
    q = torch.randn(b, h, s, d, generator=gen)
    k = torch.randn(b, kvh, s, d, generator=gen)
    v = torch.randn(b, kvh, s, d, generator=gen)
    return tuple(t.to(device=device, dtype=dtype) for t in (q, k, v))


def flash_attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal softmax(Q K^T / sqrt(head_dim)) V in fp32, key/value heads shared by groups of query heads."""
    group = q.shape[1] // k.shape[1]
    k = k.float().repeat_interleave(group, dim=1)
    v = v.float().repeat_interleave(group, dim=1)
    return torch.nn.functional.scaled_dot_product_attention(q.float(), k, v, is_causal=True)
