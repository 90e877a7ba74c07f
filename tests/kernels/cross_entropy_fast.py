"""A known-faster kernel.py for triton-cross-entropy (untimed here: see tests/test_task_suite.py).

Same semantics as the task's baseline. The row is read once: an online log-sum-exp over blocks of 4096 (the block's
max, then the running sum rescaled once per block), 8 warps. Expected >= 1.2x on an H200 (half the bytes of the
baseline's two passes); not yet measured.
"""
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 4096
NUM_WARPS = 8
IGNORE_INDEX = -100


@triton.jit
def cross_entropy_kernel(logits_ptr, labels_ptr, loss_ptr, n_cols, row_stride, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = logits_ptr + row.to(tl.int64) * row_stride
    label = tl.load(labels_ptr + row)
    if label == ignore_index:
        tl.store(loss_ptr + row, 0.0)
    else:
        m = float("-inf")
        s = 0.0
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(m, tl.max(x, axis=0))
            s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
            m = m_new
        target = tl.load(x_row + label).to(tl.float32)
        tl.store(loss_ptr + row, m + tl.log(s) - target)


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-token cross-entropy of logits (tokens, vocab) against int64 labels (tokens,) (-100: ignored, loss 0);
    returns a new fp32 tensor of shape (tokens,)."""
    if logits.stride(-1) != 1:
        logits = logits.contiguous()
    n_rows, n_cols = logits.shape
    loss = torch.empty((n_rows,), dtype=torch.float32, device=logits.device)
    block = min(BLOCK_SIZE, triton.next_power_of_2(n_cols))
    cross_entropy_kernel[(n_rows,)](logits, labels, loss, n_cols, logits.stride(0), IGNORE_INDEX, BLOCK=block,
                                    num_warps=NUM_WARPS)
    return loss
