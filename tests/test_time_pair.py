"""The harness's timing loop (harness.time_pair) on a simulated device: no GPU is needed to check what runs in
which order, that every timed run is preceded by its own refresh and flush, and that each time read belongs to
the run it is reported for (a graph's events are read before that graph is replayed again)."""
from types import SimpleNamespace

import pytest

from kernelgym.grader import harness


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


def kernel(dev, who, inner):
    t = SimpleNamespace(who=who, inner=inner, graph=who if inner else None, start=Event(), end=Event())
    t.refresh = lambda values: dev.log.append(("refresh", values))

    def call():
        dev.run(who)
    t.call = call
    return t


@pytest.fixture
def dev(monkeypatch):
    d = Device()
    kernels = {}

    def replay(graph):  # a graph with events inside: start, the kernel, end
        t = kernels[graph]
        t.start.t = d.clock
        d.run(graph)
        t.end.t = d.clock

    def record(ev):
        ev.t = d.clock
    monkeypatch.setattr(harness, "_Event", Event)
    monkeypatch.setattr(harness, "_record", record)
    monkeypatch.setattr(harness, "_replay", replay)
    monkeypatch.setattr(harness, "_synchronize", lambda: None)
    monkeypatch.setattr(harness, "_elapsed", lambda s, e: e.t - s.t)
    monkeypatch.setattr(harness, "_sum", lambda flush: d.log.append(("flush",)))
    d.kernels = kernels
    return d


@pytest.mark.parametrize("inner", [True, False])
def test_each_time_belongs_to_its_run_and_follows_its_own_refresh_and_flush(dev, inner):
    base, cand = kernel(dev, "baseline", inner), kernel(dev, "candidate", inner)
    dev.kernels.update(baseline=base, candidate=cand)
    pool = ["verify", "set1", "set2", "set3"]
    times, how = harness.time_pair(base, cand, pool, flush=object(), reps=20, rounds=4, reset_l2=None)
    assert how == ("events in the graphs" if inner else "events around each call")
    assert times["baseline"] == pytest.approx(dev.durations["baseline"])  # right time, right run, in order
    assert times["candidate"] == pytest.approx(dev.durations["candidate"])
    assert len(times["baseline"]) == len(times["candidate"]) == 20
    runs = [i for i, op in enumerate(dev.log) if op[0] == "run"]
    prev = -1
    for i in runs:
        between = [op[0] for op in dev.log[prev + 1:i]]
        assert between == ["refresh", "flush"], between  # one fresh input set and one flush per timed run
        prev = i
    # Order alternates by round: B then C, then C then B.
    order = [op[1] for op in dev.log if op[0] == "run"]
    assert order[:5] == ["baseline"] * 5 and order[5:15] == ["candidate"] * 10 and order[15:20] == ["baseline"] * 5
    # Inputs rotate through the pool, the verification set included, and never repeat back to back.
    sets = [op[1] for op in dev.log if op[0] == "refresh"]
    assert set(sets) == set(pool) and all(a != b for a, b in zip(sets, sets[1:]))


def test_every_graph_is_captured_on_one_stream(monkeypatch):
    """The caching allocator reuses a freed block only on the stream it was allocated on: the candidate's graph
    writes its output where the baseline's did only if both are captured on the same stream (on the H200, a stream
    per capture put them 0.3-3 GB apart and a copy of the baseline timed ~1% slow; benchmarks/results run 14-15)."""
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
    for _ in range(3):
        t = harness.Timed(lambda x: x, (harness.torch.zeros(4),), warmup=1, pool=None)
        assert t.graph is not None and t.inner
    assert len(captured_on) == 3 and captured_on[0] is not None
    assert all(s is captured_on[0] for s in captured_on)
