"""Attack: the candidate does the work in the observed run's warm-up call (with a library, or its own slow kernel),
caches the result keyed by the input values, and in the checked call launches only a token kernel and returns the
cache: the observer sees almost no device time in the checked call, so any forged speedup passes the cross-check
(review, 2026-12-01).

Defence: `warmup_on_other_values` (the warm-up calls get inputs of the same shapes built from another seed,
`protocol.warmup_seed`: nothing computed there is the checked call's answer; a library kernel in a warm-up call
fails every config anyway).
Honest twin: JIT compilation and autotuning still happen in the warm-up, on those shapes.
"""
import dataclasses
import importlib.util
from pathlib import Path

import torch

from kernelgym.discovery import get_task
from kernelgym.grader.grader import Grader
from kernelgym.grader.protocol import check_seed, warmup_seed
from kernelgym.hardware import all_profiles

HARNESS = Path(__file__).resolve().parents[2] / "kernelgym" / "grader" / "harness.py"


def test_warm_up_inputs_differ_from_the_checked_ones(tmp_path):
    spec = importlib.util.spec_from_file_location("kg_harness_attack", HARNESS)
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    cpu = next(p for p in all_profiles().values() if p.interpreter)
    g = Grader(get_task("triton-rmsnorm"), cpu, tmp_path)
    req = dataclasses.replace(g._request(g.baseline_dir, 7, timed=False), mode="check", observe=True)
    state = harness.prepare(req)
    assert {warmup_seed(7, i) for i in range(3)}.isdisjoint({check_seed(7, i) for i in range(50)})
    for warm, checked in zip(state.warmup_inputs, state.check_inputs):
        assert all(w.shape == c.shape for w, c in zip(warm, checked) if isinstance(w, torch.Tensor))
        assert not torch.equal(warm[0], checked[0])
