"""Per-token cross-entropy loss over a vocabulary, as a Triton kernel (baseline).

loss[t] = logsumexp(logits[t]) - logits[t, labels[t]] in fp32; tokens with label -100 (ignore_index) get 0.

This is the task's honest, unoptimized baseline: one program per token, a fixed block of 1024 columns and two
passes over the row (maximum, then the sum of exponentials). Edit this file to make it faster; keep
`cross_entropy`'s signature and semantics.
"""
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 1024
NUM_WARPS = 4
IGNORE_INDEX = -100


@triton.jit
def cross_entropy_kernel(logits_ptr, labels_ptr, loss_ptr, n_cols, row_stride, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = logits_ptr + row.to(tl.int64) * row_stride
    label = tl.load(labels_ptr + row)
    if label == ignore_index:
        tl.store(loss_ptr + row, 0.0)
    else:
        # Pass 1: the maximum.
        m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
            m = tl.maximum(m, x)
        row_max = tl.max(m, axis=0)
        # Pass 2: the sum of exponentials.
        s = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
            s += tl.exp(x - row_max)
        lse = row_max + tl.log(tl.sum(s, axis=0))
        target = tl.load(x_row + label).to(tl.float32)
        tl.store(loss_ptr + row, lse - target)


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-token cross-entropy of logits (tokens, vocab) against int64 labels (tokens,) (-100: ignored, loss 0);
    returns a new fp32 tensor of shape (tokens,)."""
    if logits.stride(-1) != 1:
        logits = logits.contiguous()
    n_rows, n_cols = logits.shape
    loss = torch.empty((n_rows,), dtype=torch.float32, device=logits.device)
    cross_entropy_kernel[(n_rows,)](logits, labels, loss, n_cols, logits.stride(0), IGNORE_INDEX, BLOCK=BLOCK_SIZE,
                                    num_warps=NUM_WARPS)
    return loss
