"""Attack: the kernel returns a torch.Tensor subclass, whose __torch_function__ can do the work lazily, when the
output is compared or copied out, outside the timed window; or returns plain tensors while warmed up and checked,
and a subclass only from the call captured into the timed graph.

Defence: `plain_tensor_outputs` (outputs must be exactly torch.Tensor: checked at the check, at capture, where a
subclass is refused rather than a reason to fall back to eager timing, and in the timed runs).
Graded with the static provenance check off: this test is about the output's type, whatever that check sees.
Honest twin: the baseline returns a plain tensor and scores 120 (tests/test_grader.py).
"""
import pytest
import torch

from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig, harness

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()
SLOTS = [harness.protocol.OutputSlot("out")]  # one returned output


def test_a_tensor_subclass_output_fails_the_check(grade):
    # A subclass could compute lazily, in __torch_function__ when compared or copied out, outside the timed window.
    src = BASELINE.replace("def rmsnorm(", "def _rmsnorm(") + '''

class Lazy(torch.Tensor):
    pass


def rmsnorm(x, weight, eps=1e-6):
    return _rmsnorm(x, weight, eps).as_subclass(Lazy)
'''
    g = grade(src, config=GraderConfig(static_check=False))
    assert g.compiled and not g.correct and "not a subclass" in "\n".join(g.stages[1].messages), g.summary()


def test_a_subclass_returned_only_when_captured_is_refused_not_timed_eagerly(fake_cuda):
    # The warm-up calls return plain tensors; the captured call a subclass (lazy work at copy-out). Capture must
    # not quietly fall back to eager timing, where only the checked runs would look at the type.
    class Lazy(torch.Tensor):
        pass

    calls = {"n": 0}

    def fn(x):
        calls["n"] += 1
        return x.clone() if calls["n"] <= 2 else x.clone().as_subclass(Lazy)
    with pytest.raises(harness.NotPlain):
        harness.Timed(fn, (torch.zeros(4),), warmup=1, slots=SLOTS, pool=None)
