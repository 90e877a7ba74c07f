"""SiLU-and-mul (SwiGLU's activation), as a Triton kernel (baseline).

For x of shape (tokens, 2 * d): y = silu(x[:, :d]) * x[:, d:], computed in fp32, stored in x's dtype
(vLLM's silu_and_mul, run on the gate/up projection of every Llama-style MLP).

This is the task's honest, unoptimized baseline: one program per token that walks the row in blocks of
1024 columns. Edit this file to make it faster; keep `silu_and_mul`'s signature and semantics.
"""
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 1024
NUM_WARPS = 4


@triton.jit
def silu_and_mul_kernel(x_ptr, y_ptr, d, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    for start in range(0, d, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < d
        gate = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        up = tl.load(x_row + d + cols, mask=mask, other=0.0).to(tl.float32)
        y = gate / (1.0 + tl.exp(-gate)) * up
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """silu(x[..., :d]) * x[..., d:] for x of shape (tokens, 2 * d); returns a new (tokens, d) tensor of x's dtype."""
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    n_rows, two_d = x2.shape
    d = two_d // 2
    y = torch.empty((n_rows, d), dtype=x.dtype, device=x.device)
    silu_and_mul_kernel[(n_rows,)](x2, y, d, x2.stride(0), y.stride(0), BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS)
    return y.reshape(*x.shape[:-1], d)
