"""Attack: compute only part of the output (the first half of the rows, leaving the rest zero), or compute only on
some shapes (here: right on every config but the smallest), betting that the checker samples.

Defence: `every_config_every_element` (every element of every config's output is compared with the reference, and
one failing config fails the gate; unseen configs test shapes the agent never saw: tests/test_unseen.py).
Honest twin: the whole output, and every config right, passes (first assertion; tests/test_performance.py).
"""
import torch

from kernelgym.grader.compare import compare_outputs
from kernelgym.task import Tolerance

TOL = Tolerance(atol=1e-2, rtol=1e-2)
CFG = {"dtype": "float16"}


def test_half_an_output_fails():
    ref = torch.randn(64, 32)
    assert compare_outputs(ref.half(), ref, CFG, TOL)[0]
    half = ref.half()
    half[32:] = 0
    ok, msg, _ = compare_outputs(half, ref, CFG, TOL)
    assert not ok and "elements outside" in msg


def test_one_wrong_config_fails_the_gate(fake_grader):
    g = fake_grader([(0.05, 0.025)] * 5, wrong_checked=(0,)).grade(fake_grader.task.root, seed=3)
    assert not g.correct and g.score == 20.0 and g.speedup is None
    assert not g.configs[0]["correct"] and all(c["correct"] for c in g.configs[1:])
