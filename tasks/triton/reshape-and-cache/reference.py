"""PyTorch reference and input builder for the reshape-and-cache task (an in-place KV-cache write)."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (key, value, key_cache, value_cache, slot_mapping) for `config` = {tokens, kv_heads, head_dim,
    block_size, num_blocks, dtype}.

    key, value: (tokens, kv_heads, head_dim) ~ N(0, 1); key_cache, value_cache: (num_blocks, block_size, kv_heads,
    head_dim) ~ N(0, 1) as well (stale entries: a kernel that writes the wrong slot or clobbers others fails);
    slot_mapping: int64 (tokens,), distinct slots drawn at random over the whole cache, with about one token in
    eight set to -1 (padding, skipped) when there are at least 8 tokens. Drawn on the CPU from a seeded generator.
    """
    dtype = getattr(torch, config["dtype"])
    t, h, d, bs, nb = (config[k] for k in ("tokens", "kv_heads", "head_dim", "block_size", "num_blocks"))
    gen = torch.Generator(device="cpu").manual_seed(seed)
    key = torch.randn(t, h, d, generator=gen)
    value = torch.randn(t, h, d, generator=gen)
    key_cache = torch.randn(nb, bs, h, d, generator=gen)
    value_cache = torch.randn(nb, bs, h, d, generator=gen)
    slots = torch.randperm(nb * bs, generator=gen)[:t].to(torch.int64)
    if t >= 8:
        pad = torch.randperm(t, generator=gen)[: t // 8]
        slots[pad] = -1
    return (key.to(device=device, dtype=dtype), value.to(device=device, dtype=dtype),
            key_cache.to(device=device, dtype=dtype), value_cache.to(device=device, dtype=dtype), slots.to(device))


def reshape_and_cache_reference(key, value, key_cache, value_cache, slot_mapping) -> tuple:
    """(key_cache, value_cache) after the write, as new tensors of the caches' dtype (the inputs are left alone)."""
    kc, vc = key_cache.clone(), value_cache.clone()
    nb, bs = kc.shape[:2]
    keep = slot_mapping >= 0
    slots = slot_mapping[keep]
    kc.view(nb * bs, *kc.shape[2:])[slots] = key[keep]
    vc.view(nb * bs, *vc.shape[2:])[slots] = value[keep]
    return kc, vc
