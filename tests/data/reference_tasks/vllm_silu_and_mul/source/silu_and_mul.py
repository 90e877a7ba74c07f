"""SiLU-and-mul, as vLLM's activation: out[i, j] = silu(x[i, j]) * x[i, d + j] for x of shape (n, 2d)."""
import torch
import triton
import triton.language as tl


@triton.jit
def silu_and_mul_kernel(x_ptr, out_ptr, d, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < d
    a = tl.load(x_ptr + row * 2 * d + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * 2 * d + d + cols, mask=mask, other=0.0).to(tl.float32)
    y = a / (1.0 + tl.exp(-a)) * b
    tl.store(out_ptr + row * d + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    n, two_d = x.shape
    d = two_d // 2
    out = torch.empty((n, d), dtype=x.dtype, device=x.device)
    block = 64
    silu_and_mul_kernel[(n, triton.cdiv(d, block))](x, out, d, BLOCK=block)
    return out
