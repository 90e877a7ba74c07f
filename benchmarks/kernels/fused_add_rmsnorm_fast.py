"""A known-faster fused residual add + RMSNorm (benchmarks and tests) for the fused-add-rmsnorm task.

One read of x, residual and weight and one write of y and the sum per row: the block is the next power of two
of hidden, so the summed row stays in registers; num_warps grows with the block. Honest and general: masked
loads and stores for any hidden size, the sum rounded to the input dtype before the norm (the task's rule),
fp32 accumulation.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def fused_add_rmsnorm_kernel(x_ptr, res_ptr, w_ptr, y_ptr, r_ptr, n_cols, x_row_stride, res_row_stride,
                             y_row_stride, r_row_stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    res = tl.load(res_ptr + row * res_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    r = (x + res).to(r_ptr.dtype.element_ty)
    tl.store(r_ptr + row * r_row_stride + cols, r, mask=mask)
    rf = r.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(rf * rf, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * y_row_stride + cols, (rf * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                      eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    x2 = x.reshape(-1, x.shape[-1])
    res2 = residual.reshape(-1, residual.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    if res2.stride(-1) != 1:
        res2 = res2.contiguous()
    y = torch.empty_like(x2)
    r = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    block = triton.next_power_of_2(n_cols)
    num_warps = min(max(block // 256, 1), 16)
    fused_add_rmsnorm_kernel[(n_rows,)](x2, res2, weight, y, r, n_cols, x2.stride(0), res2.stride(0),
                                        y.stride(0), r.stride(0), eps, BLOCK=block, num_warps=num_warps)
    return y.reshape(x.shape), r.reshape(x.shape)
