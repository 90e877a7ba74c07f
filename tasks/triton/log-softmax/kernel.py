"""Log-softmax over the last dimension (logprobs of sampling), as a Triton kernel (baseline).

y = x - max(x) - log(sum(exp(x - max(x)))), computed in fp32 and returned in fp32.

This is the task's honest, unoptimized baseline: one program per row, a fixed block of 1024 columns and three
passes over the row (max; sum of exponentials; subtract and store). Edit this file to make it faster; keep
`log_softmax`'s signature and semantics.
"""
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 1024
NUM_WARPS = 4


@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        s += tl.exp(x - row_max)
    lse = row_max + tl.log(tl.sum(s, axis=0))
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, x - lse, mask=mask)


def log_softmax(x: torch.Tensor) -> torch.Tensor:
    """Log-softmax of x (rows, cols) over the last dimension; returns a new fp32 tensor of x's shape."""
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    n_rows, n_cols = x2.shape
    y = torch.empty((n_rows, n_cols), dtype=torch.float32, device=x.device)
    log_softmax_kernel[(n_rows,)](x2, y, n_cols, x2.stride(0), y.stride(0), BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS)
    return y.reshape(x.shape)
