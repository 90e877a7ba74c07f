"""PyTorch reference and input builder for the fused-add-rmsnorm task.

`make_inputs(config, seed, device)` builds the kernel's arguments for one
config; `fused_add_rmsnorm_reference(*inputs)` computes the expected outputs
(y, residual_out) in fp32.

The rounding rule (as vLLM's CUDA `fused_add_rms_norm`): the sum
r = x + residual is rounded to the input dtype (fp16/bf16), and the norm is
taken of that rounded sum. Here the sum is formed in fp32 and rounded once;
for fp16 and bf16 that equals the dtype's own correctly rounded addition
(fp32 carries more than twice their precision plus two bits, so the double
rounding is harmless).
"""
import torch


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (x, residual, weight, eps) for `config` = {tokens, hidden, dtype}.

    x: (tokens, hidden) ~ N(0, 1), the layer's output; residual: (tokens, hidden)
    ~ N(0, 2^2), the residual stream (larger, as in real models); weight:
    (hidden,) ~ 1 + 0.1 N(0, 1). All of `dtype` on `device`, drawn on the CPU
    from a seeded generator (never zeros); eps = 1e-6.
    """
    dtype = getattr(torch, config["dtype"])
    tokens, hidden = config["tokens"], config["hidden"]
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(tokens, hidden, generator=gen, dtype=torch.float32)
    residual = 2.0 * torch.randn(tokens, hidden, generator=gen, dtype=torch.float32)
    w = 1.0 + 0.1 * torch.randn(hidden, generator=gen, dtype=torch.float32)
    return (x.to(device=device, dtype=dtype), residual.to(device=device, dtype=dtype),
            w.to(device=device, dtype=dtype), 1e-6)


def fused_add_rmsnorm_reference(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                                eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, r) with r = (x + residual) rounded to x's dtype and y = r / sqrt(mean(r^2, -1) + eps) * weight,
    computed in fp32; both returned as fp32."""
    r = (x.float() + residual.float()).to(x.dtype).float()
    rstd = torch.rsqrt(r.pow(2).mean(dim=-1, keepdim=True) + eps)
    return r * rstd * weight.float(), r
