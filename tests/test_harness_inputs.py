"""The harness's seeded inputs (harness.seeded_inputs): the check, warm-up and verification sets, each built in a
forked child of its own at once (harness.in_forked_children), give exactly what the task's builder gives for each
seed, and a failing or dying builder process is an error the caller sees, never a silent empty set."""
import os
import time
from types import SimpleNamespace

import pytest
import torch

from kernelgym.discovery import get_task
from kernelgym.grader import harness

protocol = harness.protocol  # the module the harness loaded (by path, as the sandbox does)


def test_the_children_run_at_once_and_their_values_come_back_in_order(tmp_path):
    # A barrier: each child marks itself and waits for every other's mark; one after another, the first would wait
    # for the second forever (here: until its deadline, and then the test fails).
    n = 3

    def work(i):
        (tmp_path / f"in-{i}").touch()
        deadline = time.monotonic() + 30
        while len(list(tmp_path.glob("in-*"))) < n:
            if time.monotonic() > deadline:
                return "timed out at the barrier"
            time.sleep(0.01)
        return (i, os.getpid())

    got = harness.in_forked_children([lambda i=i: work(i) for i in range(n)])
    assert [g[0] for g in got] == [0, 1, 2], got
    assert len({g[1] for g in got} | {os.getpid()}) == n + 1  # each in a process of its own


def test_a_failing_or_dying_child_is_an_error_for_the_caller():
    def boom():
        raise ValueError("the builder broke")

    with pytest.raises(RuntimeError, match="the builder broke"):
        harness.in_forked_children([lambda: 1, boom])
    with pytest.raises(harness.protocol.ProtocolError, match="bad request"):
        harness.in_forked_children([lambda: (_ for _ in ()).throw(harness.protocol.ProtocolError("bad request")), lambda: 2])
    with pytest.raises(RuntimeError, match="died"):
        harness.in_forked_children([lambda: 1, lambda: os._exit(3)])
    assert harness.in_forked_child(lambda: {"a": torch.arange(3)})["a"].tolist() == [0, 1, 2]


@pytest.mark.parametrize("observe,timed", [(True, True), (False, True), (False, False)])
def test_seeded_inputs_are_the_builders_own_for_each_seed(observe, timed):
    task = get_task("triton-rmsnorm")
    configs = task.spec.interpreter_configs
    req = SimpleNamespace(input_builder=task.spec.input_builder, builder_directory=str(task.root), mode="grade",
                          configs=configs, seed=1234, observe=observe,
                          baseline_directory=str(task.root) if timed else None)
    got = harness.in_forked_child(lambda: harness.seeded_inputs(req))
    builder = harness.load(req.input_builder, req.builder_directory, "kernelgym_inputs_test")
    want = {"check": protocol.check_seed, "warmup": protocol.warmup_seed if observe else None,
            "verify": protocol.verify_seed if timed else None}
    for kind, seed_of in want.items():
        if seed_of is None:
            assert got[kind] == [], kind
            continue
        assert len(got[kind]) == len(configs)
        for i, cfg in enumerate(configs):
            expected = builder(cfg, seed_of(1234, i), "cpu")
            assert all(torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b
                       for a, b in zip(got[kind][i], expected)), (kind, i)
