"""Attack: compute once, then return the cached output on every later call. The timed runs call the kernel on the
same static buffers (same pointers) every time, so a cache keyed by input pointer never misses; in a graph, the
replays then write nothing and the output block keeps the first result.

Defence: `fresh_inputs_every_run` (before every timed run the next of GraderConfig.input_sets value sets is copied
into the static buffers, never the same twice in a row, and runs are checked against the baseline's output on the
set they were given: a stale output is caught). The last assertion shows why the sets must change: with one set,
the cache goes unnoticed. Not caught: a cache keyed by content over the few sets (docs/THREAT_MODEL.md, known
limits).
Honest twin: a kernel that computes every time passes the same checks (tests/test_time_pair.py).
"""
import pytest

from kernelgym.grader import harness


class FirstCallOnly:
    """`honest_on` of a simulated kernel that computes on its first call only."""

    def __init__(self):
        self.calls = 0

    def __contains__(self, _):
        self.calls += 1
        return self.calls == 1


@pytest.mark.parametrize("inner", [True, False])
def test_an_output_cached_after_the_first_call_is_caught(sim_device, inner):
    dev = sim_device
    base, cand = dev.kernel("baseline", inner), dev.kernel("candidate", inner, honest_on=FirstCallOnly())
    _, _, wrong = harness.time_pair(base, cand, dev.POOL, flush=None, reps=100, rounds=10, reset_l2=None,
                                    expected=dev.expected(), tolerances=[(1e-3, 1e-3)])
    assert wrong is not None and wrong.startswith("candidate's timed run"), wrong


def test_with_one_input_set_the_cache_would_pass(sim_device):
    dev = sim_device
    base, cand = dev.kernel("baseline", False), dev.kernel("candidate", False, honest_on=FirstCallOnly())
    _, _, wrong = harness.time_pair(base, cand, dev.POOL[:1], flush=None, reps=100, rounds=10, reset_l2=None,
                                    expected=dev.expected()[:1], tolerances=[(1e-3, 1e-3)])
    assert wrong is None  # no fresh inputs: every check sees the answer of the first call again
