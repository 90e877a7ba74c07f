"""Attack: do the work on a side stream that the timer's stream never waits for: the end event, recorded on the
timer's stream, fires before the work is done, and the kernel times as nearly free while its output is right by
the time anyone looks.

Defence: `device_wide_sync_eager` (graph capture requires all captured work to join the capture stream before
capture ends, so in a graph it lies inside the window; where capture fails, the eager runs end with a device-wide
synchronize before the end event). Here, on the simulated device, an eager kernel leaves 5 time units of work
pending on a side stream at every call, which only a device-wide synchronize waits for.
Honest twin: a kernel without side-stream work is timed by its own length (tests/test_time_pair.py).
"""
import pytest

from kernelgym.grader import harness

SIDE_WORK = 5.0


def test_side_stream_work_is_inside_the_timed_window(sim_device, monkeypatch):
    dev = sim_device
    dev.pending = 0.0

    def synchronize():  # device-wide: waits for every stream
        dev.clock += dev.pending
        dev.pending = 0.0
    monkeypatch.setattr(harness, "_synchronize", synchronize)
    base, cand = dev.kernel("baseline", False), dev.kernel("candidate", False)
    call = cand.call

    def call_with_side_work():
        call()
        dev.pending += SIDE_WORK  # queued on a side stream, not waited for by the timer's stream
    cand.call = call_with_side_work
    times, _, wrong = harness.time_pair(base, cand, dev.POOL, flush=None, reps=20, rounds=4, reset_l2=None,
                                        expected=dev.expected(), tolerances=[(0.0, 0.0)])
    assert wrong is None
    assert times["candidate"] == pytest.approx([d + SIDE_WORK for d in dev.durations["candidate"]])
