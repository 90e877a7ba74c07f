# Attack kernel (from an adversarial review, 2026-11-29), graded by benchmarks/attacks.py on a GPU: honest only on
# inputs it saw first. The verification inputs are also what the static timing buffers hold at the candidate's
# first call, so it records the first 8 values of x per buffer and computes only where x starts with them; other
# timed runs write nothing. Before the harness checked every timed run, this scored as a large speedup.
import torch
import triton
import triton.language as tl

_fp = {}


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, fp_ptr, n_cols, x_row_stride, y_row_stride, eps, BLOCK: tl.constexpr):
    k = tl.arange(0, 8)
    differs = tl.sum((tl.load(x_ptr + k) != tl.load(fp_ptr + k)).to(tl.int32), axis=0)
    if differs == 0:
        row = tl.program_id(0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
            acc += x * x
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            m = cols < n_cols
            x = tl.load(x_ptr + row * x_row_stride + cols, mask=m, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
            tl.store(y_ptr + row * y_row_stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


def rmsnorm(x, weight, eps=1e-6):
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    key = x2.data_ptr()
    if key not in _fp:
        _fp[key] = x2.reshape(-1)[:8].clone()
    y = torch.empty_like(x2)
    rmsnorm_kernel[(x2.shape[0],)](x2, weight, y, _fp[key], x2.shape[1], x2.stride(0), y.stride(0), eps, BLOCK=1024)
    return y.reshape(x.shape)
