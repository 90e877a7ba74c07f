"""Attack: return an output that was never written: a ``torch.empty`` whose block the caching allocator hands back
from the last output freed there, the baseline's answer on the same inputs (both kernels' graphs write one shared
block), or the kernel's own earlier answer. The graph then replays nothing and the "output" is right.

Defence: `output_poisoned_with_nan` (the graph's returned output block is filled with NaN before every timed run and
before the verification call: a run that writes nothing leaves NaN, which never passes).
Honest twin: a kernel that writes its output overwrites the NaN (every honest grading on a GPU; here the fake graph
runs nothing, which is the attack).
"""
import torch

from kernelgym.grader import harness
from kernelgym.grader.compare import compare_outputs
from kernelgym.task import Tolerance

SLOTS = [harness.protocol.OutputSlot("out")]


def test_an_unwritten_output_holds_nan_not_the_last_answer(fake_cuda):
    answer = torch.randn(4, 8).half()
    block = answer.clone()  # the right answer still lies in the block the graph returns

    def reuses_block(x):
        return block  # computes nothing
    t = harness.Timed(reuses_block, (torch.zeros(4, 8),), warmup=1, slots=SLOTS, pool=None)
    assert t.graph is not None and t.out[0] is block
    t.poison()
    t.call()  # the graph replays; nothing writes the block
    assert bool(torch.isnan(t.out[0]).all())
    ok, msg, _ = compare_outputs(t.out[0], answer.float(), {"dtype": "float16"}, Tolerance(atol=1e-2, rtol=1e-2))
    assert not ok and "non-finite" in msg
