"""PyTorch reference and input builder for the rotary-embedding task (NeoX style, full rotary dim)."""
import torch

MAX_POSITION = 8192
BASE = 500000.0  # llama-3's rope theta


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (positions, query, key, cos_sin_cache, head_dim) for `config` = {tokens, heads, kv_heads, head_dim,
    dtype}: int64 positions uniform in [0, 8192); query (tokens, heads * head_dim) and key (tokens, kv_heads *
    head_dim) ~ N(0, 1); cos_sin_cache (8192, head_dim) = [cos | sin] of position * inv_freq with theta 500000, as
    vLLM builds it, in `dtype`. Drawn on the CPU from a seeded generator, then moved to `device`."""
    dtype = getattr(torch, config["dtype"])
    t, h, kvh, d = config["tokens"], config["heads"], config["kv_heads"], config["head_dim"]
    gen = torch.Generator(device="cpu").manual_seed(seed)
    positions = torch.randint(0, MAX_POSITION, (t,), generator=gen, dtype=torch.int64)
    query = torch.randn(t, h * d, generator=gen)
    key = torch.randn(t, kvh * d, generator=gen)
    inv_freq = 1.0 / (BASE ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    freqs = torch.outer(torch.arange(MAX_POSITION, dtype=torch.float32), inv_freq)
    cache = torch.cat([freqs.cos(), freqs.sin()], dim=-1)
    return (positions.to(device), query.to(device=device, dtype=dtype), key.to(device=device, dtype=dtype),
            cache.to(device=device, dtype=dtype), d)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, head_dim: int) -> torch.Tensor:
    t = x.shape[0]
    x = x.float().view(t, -1, head_dim)
    x1, x2 = x[..., : head_dim // 2], x[..., head_dim // 2:]
    out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    return out.view(t, -1)


def rotary_embedding_reference(positions, query, key, cos_sin_cache, head_dim) -> tuple:
    """(query_out, key_out) in fp32: NeoX-style rotation of each head by the cache row at its token's position."""
    cs = cos_sin_cache.float()[positions]
    cos, sin = cs[:, None, : head_dim // 2], cs[:, None, head_dim // 2:]
    return _rotate(query, cos, sin, head_dim), _rotate(key, cos, sin, head_dim)
