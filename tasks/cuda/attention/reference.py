"""The PyTorch module this task replaces, its fp32 reference and the input builder (cuda attention, torch2cuda).

`CausalAttention` is the attention core of a GPT-style block as many model files write it (scores, causal mask,
softmax in fp32, weighted sum of values); binding.cpp's baseline runs the same operations through ATen.
`make_inputs(config, seed, device)` builds the entry point's arguments; `attention_reference(*inputs)` computes the
expected output in fp32.
"""
import math

import torch


class CausalAttention(torch.nn.Module):
    """O = softmax(Q K^T / sqrt(head_dim), keys after the query masked out) V over (batch, heads, seq, head_dim)
    tensors; the scores in the inputs' dtype, the softmax in fp32, P rounded to the dtype before P V."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        seq = q.shape[-2]
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        mask = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        p = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        return torch.matmul(p, v)


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (q, k, v) for `config` = {batch, heads, seq, head_dim, dtype}: each (batch, heads, seq, head_dim) ~
    N(0, 1), contiguous, drawn on the CPU from a seeded generator, then moved to `device` in `dtype`."""
    dtype = getattr(torch, config["dtype"])
    shape = tuple(config[n] for n in ("batch", "heads", "seq", "head_dim"))
    gen = torch.Generator(device="cpu").manual_seed(seed)
    return tuple(torch.randn(shape, generator=gen).to(device=device, dtype=dtype) for _ in range(3))


def attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal attention on fp32 copies of the inputs (no intermediate rounding): fp32 of q's shape."""
    return torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
