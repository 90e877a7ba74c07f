"""PyTorch reference and input builder for the paged-attention-decode task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (query, key_cache, value_cache, block_tables, seq_lens, scale) for `config` = {num_seqs, heads,
    kv_heads, head_dim, block_size, context, num_blocks, dtype}.

    query (num_seqs, heads, head_dim) and the caches (num_blocks, block_size, kv_heads, head_dim) ~ N(0, 1) in
    `dtype`; seq_lens, int32, uniform in [ceil(3 context / 4), context] with the first sequence exactly `context`
    long; block_tables, int32 (num_seqs, ceil(context / block_size)), each sequence's blocks distinct and scattered
    (a random permutation of all blocks), unused entries pointing at real blocks too; scale = 1 / sqrt(head_dim).
    Drawn on the CPU from a seeded generator, then moved to `device`.
    """
    dtype = getattr(torch, config["dtype"])
    n, h, kvh, d, bs, ctx, nb = (config[k] for k in ("num_seqs", "heads", "kv_heads", "head_dim", "block_size",
                                                     "context", "num_blocks"))
    gen = torch.Generator(device="cpu").manual_seed(seed)
    query = torch.randn(n, h, d, generator=gen)
    key_cache = torch.randn(nb, bs, kvh, d, generator=gen)
    value_cache = torch.randn(nb, bs, kvh, d, generator=gen)
    lo = (3 * ctx + 3) // 4
    seq_lens = torch.randint(lo, ctx + 1, (n,), generator=gen, dtype=torch.int32)
    seq_lens[0] = ctx
    max_blocks = (ctx + bs - 1) // bs
    block_tables = torch.randperm(nb, generator=gen)[: n * max_blocks].view(n, max_blocks).to(torch.int32)
    return (query.to(device=device, dtype=dtype), key_cache.to(device=device, dtype=dtype),
            value_cache.to(device=device, dtype=dtype), block_tables.to(device), seq_lens.to(device), d ** -0.5)


def paged_attention_reference(query, key_cache, value_cache, block_tables, seq_lens, scale) -> torch.Tensor:
    """softmax(K q * scale) V per sequence and head over the sequence's cached tokens, in fp32."""
    n, h, d = query.shape
    bs, kvh = key_cache.shape[1], key_cache.shape[2]
    group = h // kvh
    out = torch.empty(n, h, d, dtype=torch.float32, device=query.device)
    for s in range(n):
        length = int(seq_lens[s])
        blocks = block_tables[s, : (length + bs - 1) // bs].long()
        k = key_cache[blocks].reshape(-1, kvh, d)[:length].float()   # (length, kv_heads, d)
        v = value_cache[blocks].reshape(-1, kvh, d)[:length].float()
        k = k.repeat_interleave(group, dim=1).transpose(0, 1)          # (heads, length, d)
        v = v.repeat_interleave(group, dim=1).transpose(0, 1)
        scores = torch.einsum("hd,hld->hl", query[s].float(), k) * scale
        out[s] = torch.einsum("hl,hld->hd", torch.softmax(scores, dim=-1), v)
    return out
