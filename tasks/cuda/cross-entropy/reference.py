"""The PyTorch module this task replaces, its fp32 reference and the input builder (cuda cross-entropy, torch2cuda).

`PerTokenCrossEntropy` is an LM head's loss as training code writes it (logits upcast to fp32, then
nn.CrossEntropyLoss with reduction 'none'); binding.cpp's baseline runs the same operations through ATen.
`make_inputs(config, seed, device)` builds the entry point's arguments; `cross_entropy_reference(*inputs)` computes
the expected output.
"""
import torch


class PerTokenCrossEntropy(torch.nn.Module):
    """loss[t] = logsumexp(logits[t].float()) - logits[t, labels[t]].float(); 0 where labels[t] == -100."""

    def __init__(self):
        super().__init__()
        self.loss = torch.nn.CrossEntropyLoss(reduction="none", ignore_index=-100)

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.loss(logits.float(), labels)


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (logits, labels) for `config` = {tokens, vocab, dtype}: logits (tokens, vocab) ~ 2 N(0, 1) in `dtype`;
    int64 labels (tokens,) uniform in [0, vocab), about one in eight set to -100 (ignored: padding or prompt tokens)
    when there are at least 8 tokens. Contiguous, drawn on the CPU from a seeded generator, then moved to `device`."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    logits = 2.0 * torch.randn(config["tokens"], config["vocab"], generator=gen, dtype=torch.float32)
    labels = torch.randint(0, config["vocab"], (config["tokens"],), generator=gen, dtype=torch.int64)
    if config["tokens"] >= 8:
        labels[torch.randperm(config["tokens"], generator=gen)[: config["tokens"] // 8]] = -100
    return logits.to(device=device, dtype=getattr(torch, config["dtype"])), labels.to(device)


def cross_entropy_reference(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """`PerTokenCrossEntropy` on the inputs: fp32 losses of shape (tokens,)."""
    return PerTokenCrossEntropy()(logits, labels)
