"""The harness's timing loop (harness.time_pair) on a simulated device (`sim_device`, conftest.py): no GPU is needed
to check what runs in which order, that every timed run is preceded by its own refresh and flush, and that each time
read belongs to the run it is reported for (a graph's events are read before that graph is replayed again). Attacks
on the timing loop are in tests/attacks/ (cheap_while_timed.py, cached_output_on_repeat_calls.py,
unwritten_output_reuses_block.py, side_stream_work.py, persisting_l2_carveout.py, patch_the_timer.py, ...)."""
import pytest

from kernelgym.grader import harness

SLOTS = [harness.protocol.OutputSlot("out")]  # one returned output


@pytest.mark.parametrize("inner", [True, False])
def test_each_time_belongs_to_its_run_and_follows_its_own_refresh_and_flush(sim_device, inner):
    dev = sim_device
    base, cand = dev.kernel("baseline", inner), dev.kernel("candidate", inner)
    pool = dev.POOL
    resets = []
    times, how, wrong = harness.time_pair(base, cand, pool, flush=object(), reps=20, rounds=4,
                                          reset_l2=lambda: resets.append(1), expected=dev.expected(),
                                          tolerances=[(0.0, 0.0)])
    assert wrong is None
    assert how == ("events in the graphs" if inner else "events around each call")
    assert times["baseline"] == pytest.approx(dev.durations["baseline"])  # right time, right run, in order
    assert times["candidate"] == pytest.approx(dev.durations["candidate"])
    # Events around each call: the graph's launch and tail (1.0 here) included.
    assert times["candidate_outer"] == pytest.approx([d + (1.0 if inner else 0.0) for d in dev.durations["candidate"]])
    assert len(times["baseline"]) == len(times["candidate"]) == len(times["baseline_outer"]) == 20
    assert len(resets) == 1  # the persisting-L2 reset before the runs
    runs = [i for i, op in enumerate(dev.log) if op[0] == "run"]
    prev = -1
    for i in runs:
        between = [op[0] for op in dev.log[prev + 1:i]]
        # one fresh input set, the output poisoned (graphs only: an eager call returns a new tensor), one flush
        assert between == (["refresh", "poison", "flush"] if inner else ["refresh", "flush"]), between
        prev = i
    # Order alternates by round: B then C, then C then B.
    order = [op[1] for op in dev.log if op[0] == "run"]
    assert order[:5] == ["baseline"] * 5 and order[5:15] == ["candidate"] * 10 and order[15:20] == ["baseline"] * 5
    # Inputs rotate through the pool, the verification set included, and never repeat back to back.
    sets = [op[1] for op in dev.log if op[0] == "refresh"]
    assert set(sets) == set(pool) and all(a != b for a, b in zip(sets, sets[1:]))


def test_every_graph_is_captured_on_one_stream(fake_cuda):
    """The caching allocator reuses a freed block only on the stream it was allocated on: the candidate's graph
    writes its output where the baseline's did only if both are captured on the same stream (on the H200, a stream
    per capture put them 0.3-3 GB apart and a copy of the baseline timed ~1% slow; benchmarks/results run 14-15)."""
    captured_on = fake_cuda
    for _ in range(3):
        t = harness.Timed(lambda x: x + 0, (harness.torch.zeros(4),), warmup=1, slots=SLOTS, pool=None)
        assert t.graph is not None and t.inner
    assert len(captured_on) == 3 and captured_on[0] is not None
    assert all(s is captured_on[0] for s in captured_on)
