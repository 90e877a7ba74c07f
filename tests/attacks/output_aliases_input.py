"""Attack: return an input (or a view of it, or the same block twice for two outputs) as an output. In the timed
runs the harness poisons the output block and copies the next input set into the inputs: an output that is an input
is overwritten by both, and the check blames the baseline; two outputs in one block hide each other's errors.

Defence: `outputs_own_memory` (a returned output must be memory of its own: one sharing its storage with an argument
or with another output is refused; outputs written into an argument must be declared with `arg` in task.yaml).
Honest twin: a returned tensor of its own is collected (first assertion).
"""
import pytest
import torch

from kernelgym.grader import harness

ONE = [harness.protocol.OutputSlot("out")]
TWO = [harness.protocol.OutputSlot("out"), harness.protocol.OutputSlot("residual_out")]


def test_an_input_returned_as_the_output_is_refused():
    x, w = torch.randn(4, 8), torch.randn(8)
    (out,) = harness.collect(x * 2, (x, w), ONE)
    assert out.shape == x.shape
    with pytest.raises(ValueError, match="shares memory with argument 0"):
        harness.collect(x, (x, w), ONE)
    with pytest.raises(ValueError, match="shares memory with argument 0"):
        harness.collect(x[1:], (x, w), ONE)  # a view of the input: the same storage


def test_two_outputs_in_one_block_are_refused():
    x = torch.randn(4, 8)
    y = x * 2
    with pytest.raises(ValueError, match="shares memory with output 'out'"):
        harness.collect((y, y), (x,), TWO)
