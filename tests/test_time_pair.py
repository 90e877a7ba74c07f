"""The harness's timing loop (harness.time_pair) on a simulated device: no GPU is needed to check what runs in
which order, that every timed run is preceded by its own refresh and flush, and that each time read belongs to
the run it is reported for (a graph's events are read before that graph is replayed again)."""
from types import SimpleNamespace

import pytest
import torch

from kernelgym.grader import harness

SLOTS = [harness.protocol.OutputSlot("out")]  # one returned output


class Device:
    """A synchronous stand-in for one CUDA stream: every operation runs when queued, in order."""

    def __init__(self):
        self.clock, self.log, self.durations = 0.0, [], {"baseline": [], "candidate": []}

    def run(self, who):  # one kernel run of `who`, each a distinct length, remembered in run order
        d = (1.0 if who == "baseline" else 2.0) + 0.001 * len(self.log)
        self.durations[who].append(d)
        self.log.append(("run", who))
        self.clock += d


class Event:
    def __init__(self, enable_timing=False, external=False):
        self.t = None


POOL = ["verify", "set1", "set2", "set3"]


def kernel(dev, who, inner, honest_on=tuple(POOL), block=None):
    """A kernel on the simulated device: its output (one number) is the index of the input set it was given, where
    that set is in `honest_on`; elsewhere it writes nothing (the output keeps what was there)."""
    block = torch.zeros(1) if block is None else block  # where its output goes (graphs may share one)
    t = SimpleNamespace(who=who, inner=inner, graph=who if inner else None, start=Event(), end=Event(), out=(block,),
                        out_address=id(block))

    def refresh(values):
        dev.log.append(("refresh", values))
        t.given = values
    t.refresh = refresh
    t.poison = lambda: harness._fill(t.out[0], float("nan")) if t.graph is not None else None  # as Timed.poison

    def call():
        if t.graph is not None:
            harness._replay(t.graph)
        else:
            dev.run(who)
        if t.given in honest_on:
            block[0] = float(POOL.index(t.given))
    t.call = call
    return t


@pytest.fixture
def dev(monkeypatch):
    d = Device()
    kernels = {}

    def replay(graph):  # a graph with events inside: launch (0.5), start, the kernel, end, graph end (0.5)
        t = kernels[graph]
        d.clock += 0.5
        t.start.t = d.clock
        d.run(graph)
        t.end.t = d.clock
        d.clock += 0.5

    def record(ev):
        ev.t = d.clock
    monkeypatch.setattr(harness, "_Event", Event)
    monkeypatch.setattr(harness, "_record", record)
    monkeypatch.setattr(harness, "_replay", replay)
    monkeypatch.setattr(harness, "_synchronize", lambda: None)
    monkeypatch.setattr(harness, "_elapsed", lambda s, e: e.t - s.t)
    monkeypatch.setattr(harness, "_sum", lambda flush: d.log.append(("flush",)))
    monkeypatch.setattr(harness, "_fill", lambda out, v: (d.log.append(("poison",)), out.fill_(v)))
    d.kernels = kernels
    return d


@pytest.mark.parametrize("inner", [True, False])
def test_each_time_belongs_to_its_run_and_follows_its_own_refresh_and_flush(dev, inner):
    base, cand = kernel(dev, "baseline", inner), kernel(dev, "candidate", inner)
    dev.kernels.update(baseline=base, candidate=cand)
    pool = POOL
    resets = []
    expected = [(torch.tensor([float(i)]),) for i in range(len(pool))]
    times, how, wrong = harness.time_pair(base, cand, pool, flush=object(), reps=20, rounds=4,
                                          reset_l2=lambda: resets.append(1), expected=expected, tolerances=[(0.0, 0.0)])
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


@pytest.fixture
def fake_cuda(monkeypatch):
    """Stand-ins for CUDA streams, graphs and events: enough to construct `harness.Timed` without a GPU. Returns the
    list of streams each capture began on."""
    import contextlib

    streams, captured_on = [], []

    class Stream:
        def __init__(self):
            streams.append(self)

        def wait_stream(self, other):
            pass

    current = {"s": None}

    @contextlib.contextmanager
    def on(stream):
        before, current["s"] = current["s"], stream
        yield
        current["s"] = before

    class Graph:
        def capture_begin(self, pool=None):
            captured_on.append(current["s"])

        def capture_end(self):
            pass

    monkeypatch.setattr(harness, "_streams", {}, raising=False)
    monkeypatch.setattr(harness.torch.cuda, "Stream", Stream)
    monkeypatch.setattr(harness.torch.cuda, "stream", on)
    monkeypatch.setattr(harness.torch.cuda, "current_stream", lambda: Stream.__new__(Stream))
    monkeypatch.setattr(harness, "_CUDAGraph", Graph)
    monkeypatch.setattr(harness, "_Event", Event)
    monkeypatch.setattr(harness, "_record", lambda ev: None)
    monkeypatch.setattr(harness, "_replay", lambda graph: None)
    monkeypatch.setattr(harness, "_synchronize", lambda: None)
    monkeypatch.setattr(harness, "_elapsed", lambda s, e: 1.0)
    return captured_on


def test_every_graph_is_captured_on_one_stream(fake_cuda):
    """The caching allocator reuses a freed block only on the stream it was allocated on: the candidate's graph
    writes its output where the baseline's did only if both are captured on the same stream (on the H200, a stream
    per capture put them 0.3-3 GB apart and a copy of the baseline timed ~1% slow; benchmarks/results run 14-15)."""
    captured_on = fake_cuda
    for _ in range(3):
        t = harness.Timed(lambda x: x, (harness.torch.zeros(4),), warmup=1, slots=SLOTS, pool=None)
        assert t.graph is not None and t.inner
    assert len(captured_on) == 3 and captured_on[0] is not None
    assert all(s is captured_on[0] for s in captured_on)


@pytest.mark.parametrize("inner", [True, False])
def test_a_kernel_that_computes_only_on_the_verification_inputs_is_caught_in_its_timed_runs(dev, inner):
    # It recognizes the verification set (by its values, or by counting calls) and skips the work elsewhere.
    base, cand = kernel(dev, "baseline", inner), kernel(dev, "candidate", inner, honest_on=("verify",))
    dev.kernels.update(baseline=base, candidate=cand)
    expected = [(torch.tensor([float(i)]),) for i in range(len(POOL))]
    _, _, wrong = harness.time_pair(base, cand, POOL, flush=None, reps=20, rounds=4, reset_l2=None,
                                    expected=expected, tolerances=[(1e-3, 1e-3)])
    assert wrong is not None and wrong.startswith("candidate's timed run"), wrong


def test_one_random_run_per_block_of_each_kernel_is_checked(dev, monkeypatch):
    # The same checks for both kernels (the work between runs stays alike), at positions drawn per block.
    cand = kernel(dev, "candidate", True)
    base = kernel(dev, "baseline", True, block=cand.out[0])
    base.out = None  # as prepared: the baseline's graph released its output tensor (it writes the candidate's block)
    dev.kernels.update(baseline=base, candidate=cand)
    checked = []
    monkeypatch.setattr(harness, "_wrong_output",
                        lambda out, exp, tol, who, run, used: checked.append((who, run)) if out is cand.out else "?")
    expected = [(torch.tensor([float(i)]),) for i in range(len(POOL))]
    harness.time_pair(base, cand, POOL, flush=None, reps=100, rounds=10, reset_l2=None, expected=expected,
                      tolerances=[(0.0, 0.0)])
    for who in ("baseline", "candidate"):
        runs = [run for w, run in checked if w == who]
        assert len(runs) == 10 and all(10 * b < run <= 10 * (b + 1) for b, run in enumerate(runs)), runs
    positions = {run % 10 for _, run in checked}
    assert len(positions) > 1  # not always the same run of the block


def test_a_candidate_graph_writing_its_output_elsewhere_is_not_mistaken_for_a_broken_baseline(dev):
    # The baseline's graph released its output tensor; where the candidate's graph writes another block, the
    # baseline's block cannot be read, and its check must not fail the timing (the honest candidate is fine).
    cand = kernel(dev, "candidate", True)
    base = kernel(dev, "baseline", True)  # its own block
    base.out = None
    dev.kernels.update(baseline=base, candidate=cand)
    expected = [(torch.tensor([float(i)]),) for i in range(len(POOL))]
    _, _, wrong = harness.time_pair(base, cand, POOL, flush=None, reps=100, rounds=10, reset_l2=None,
                                    expected=expected, tolerances=[(0.0, 0.0)])
    assert wrong is None, wrong


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
