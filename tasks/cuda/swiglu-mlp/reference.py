"""The PyTorch module this task replaces, its fp32 reference and the input builder (cuda swiglu-mlp, torch2cuda).

`SwiGLUMLP` is a Llama-family MLP block (gate, up and down projections without bias, SiLU gate); binding.cpp's
baseline runs the same operations through ATen. `make_inputs(config, seed, device)` builds the entry point's
arguments (the activations and the module's three weights); `swiglu_mlp_reference(*inputs)` computes the expected
output in fp32.
"""
import torch


class SwiGLUMLP(torch.nn.Module):
    """y = down(silu(gate(x)) * up(x)), each projection an nn.Linear without bias (weight of shape (out, in))."""

    def __init__(self, hidden: int, inter: int):
        super().__init__()
        self.gate = torch.nn.Linear(hidden, inter, bias=False)
        self.up = torch.nn.Linear(hidden, inter, bias=False)
        self.down = torch.nn.Linear(inter, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x, w_gate, w_up, w_down) for `config` = {tokens, hidden, inter, dtype}: x (tokens, hidden) ~ N(0, 1),
    w_gate and w_up (inter, hidden) ~ N(0, 1 / hidden), w_down (hidden, inter) ~ N(0, 1 / inter) (so the
    projections keep unit scale and y ~ 0.5), all contiguous, drawn on the CPU from a seeded generator, then moved
    to `device` in `dtype`."""
    dtype = getattr(torch, config["dtype"])
    t, h, i = config["tokens"], config["hidden"], config["inter"]
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(t, h, generator=gen)
    w_gate = torch.randn(i, h, generator=gen) / h ** 0.5
    w_up = torch.randn(i, h, generator=gen) / h ** 0.5
    w_down = torch.randn(h, i, generator=gen) / i ** 0.5
    return tuple(w.to(device=device, dtype=dtype) for w in (x, w_gate, w_up, w_down))


def swiglu_mlp_reference(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor,
                         w_down: torch.Tensor) -> torch.Tensor:
    """`SwiGLUMLP` with these weights, run on fp32 copies of the inputs (no intermediate rounding): fp32 (tokens,
    hidden)."""
    module = SwiGLUMLP(x.shape[1], w_gate.shape[0]).to(x.device)
    with torch.no_grad():
        for linear, w in ((module.gate, w_gate), (module.up, w_up), (module.down, w_down)):
            linear.weight.copy_(w.float())
        return module(x.float())
