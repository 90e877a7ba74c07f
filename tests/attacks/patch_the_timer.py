"""Attack: the candidate runs in the process that times it, and at import patches what a timer calls:
torch.cuda.Event.record and elapsed_time, torch.cuda.synchronize, CUDAGraph.replay (to report a short time), or
Tensor.copy_ and Tensor.fill_ (so that fresh inputs are not copied in and its output block is not poisoned).

Defence: `timer_bound_before_import` (the harness binds every function its timing loop calls when it starts,
before any candidate code runs, and calls only those). Not caught: patching the harness module's own names, or
torch internals below them (docs/THREAT_MODEL.md, known limits).
Honest twin: the same runs with nothing patched report the same times (tests/test_time_pair.py).
"""
import pytest
import torch

from kernelgym.grader import harness

SLOTS = [harness.protocol.OutputSlot("out")]


def _refuse(*args, **kwargs):
    raise AssertionError("the timer called a function the candidate patched")


@pytest.mark.parametrize("inner", [True, False])
def test_the_timing_loop_calls_none_of_torchs_patchable_functions(sim_device, monkeypatch, inner):
    dev = sim_device
    base, cand = dev.kernel("baseline", inner), dev.kernel("candidate", inner)
    for owner, name in ((torch.cuda.Event, "record"), (torch.cuda.Event, "elapsed_time"), (torch.cuda, "synchronize"),
                        (torch.cuda.CUDAGraph, "replay"), (torch.cuda.Event, "__init__")):
        monkeypatch.setattr(owner, name, _refuse)  # as a candidate would, at import
    times, _, wrong = harness.time_pair(base, cand, dev.POOL, flush=object(), reps=20, rounds=4, reset_l2=None,
                                        expected=dev.expected(), tolerances=[(0.0, 0.0)])
    assert wrong is None
    assert times["candidate"] == pytest.approx(dev.durations["candidate"])


def test_patched_tensor_methods_do_not_stop_the_refresh_or_the_poison(fake_cuda, monkeypatch):
    static = (torch.zeros(4),)
    t = harness.Timed(lambda x: x * 2, static, warmup=1, slots=SLOTS, pool=None)
    assert t.graph is not None
    monkeypatch.setattr(torch.Tensor, "copy_", lambda self, *a, **k: self)  # as a candidate would, at import
    monkeypatch.setattr(torch.Tensor, "fill_", lambda self, *a, **k: self)
    t.refresh((torch.full((4,), 3.0),))
    t.poison()
    monkeypatch.undo()
    assert torch.equal(static[0], torch.full((4,), 3.0))  # the fresh inputs were copied in
    assert bool(torch.isnan(t.out[0]).all())  # the output block was poisoned
