"""PyTorch reference and input builder for the embedding task."""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (ids, weight) for `config` = {tokens, vocab, hidden, dtype}: int32 ids (tokens,) uniform in
    [0, vocab) (repeats allowed, as in real batches) and a table weight (vocab, hidden) ~ N(0, 1) of `dtype`,
    drawn on the CPU from a seeded generator, then moved to `device`."""
    dtype = getattr(torch, config["dtype"])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    ids = torch.randint(0, config["vocab"], (config["tokens"],), generator=gen, dtype=torch.int32)
    w = torch.randn(config["vocab"], config["hidden"], generator=gen, dtype=torch.float32)
    return ids.to(device), w.to(device=device, dtype=dtype)


def embedding_reference(ids: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """weight[ids], in weight's dtype (compared exactly: the gather copies values)."""
    return weight[ids.long()]
