"""The harness's seeded inputs (harness.seeded_inputs): the check, warm-up and verification sets, each built in a
forked child of its own at once (harness.in_forked_children), give exactly what the task's builder gives for each
seed, and a failing or dying builder process is an error the caller sees, never a silent empty set."""
import json
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
                          configs=configs, seed=1234, observe=observe, marked=observe,
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


def test_a_value_comes_back_with_its_tensors_layout_dtypes_and_shared_storages():
    # The memfd hand-over (harness._send_value / _receive_value) writes each storage once and each tensor as a view
    # of it: views of one builder tensor must still share memory (an in-place kernel's output aliasing an input),
    # and strides, offsets, dtypes and requires_grad must survive.
    def work():
        x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
        return {"x": x, "row": x[1], "t": x.t(), "col": x[:, 2], "empty": torch.empty(0, 3),
                "bf16": torch.linspace(-2, 2, 7).to(torch.bfloat16), "u16": torch.arange(5).to(torch.uint16),
                "grad": torch.ones(3, requires_grad=True), "text": "eps", "number": 1e-6, "nested": [(torch.zeros(2),)]}

    got = harness.in_forked_child(work)
    want = work()
    for key in ("x", "row", "t", "col", "empty", "bf16", "u16", "grad"):
        assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape, key
        assert got[key].stride() == want[key].stride() and got[key].storage_offset() == want[key].storage_offset(), key
        assert torch.equal(got[key].detach(), want[key].detach()), key
    assert got["grad"].requires_grad and not got["x"].requires_grad
    assert (got["text"], got["number"]) == ("eps", 1e-6) and torch.equal(got["nested"][0][0], torch.zeros(2))
    got["x"][1, 2] = -1.0  # one storage: the views see the write
    assert got["row"][2] == -1.0 and got["t"][2, 1] == -1.0 and got["col"][1] == -1.0
    assert got["x"].untyped_storage().data_ptr() == got["row"].untyped_storage().data_ptr()
    same = harness.in_forked_child(lambda: (lambda x: (x, x))(torch.zeros(3)))
    assert same[0] is same[1]  # one object sent twice comes back as one


def _request(tmp_path, seed, observe=False):
    task = get_task("triton-rmsnorm")
    req = protocol.Request(mode="check" if observe else "grade", language="triton", directory=str(tmp_path),
                           entry_point=task.spec.entry_point, input_builder=task.spec.input_builder,
                           builder_directory=str(task.root), configs=task.spec.interpreter_configs, seed=seed,
                           device="cpu", outputs=[protocol.OutputSlot("y")], observe=observe,
                           baseline_directory=None if observe else str(task.root),
                           tolerances=[None] * len(task.spec.interpreter_configs))
    path = tmp_path / "request.json"
    path.write_text(json.dumps(req.to_json()))
    return task, req, str(path)


@pytest.mark.parametrize("observe", [False, True])
def test_main_gets_the_request_without_its_seed_and_each_set_from_its_builders_socket(tmp_path, observe):
    # main's child reads the request and has each set built by a child of its own, which sends it straight to main
    # (memfds on a socket main made): the child hands back only the request (seed 0) and the sets' names.
    task, req, path = _request(tmp_path, 777, observe)
    sets = [harness._socket_pair() for _ in range(harness._INPUT_SETS)]
    try:
        answer = harness.in_forked_child(lambda: harness._read_request_and_build(path, [t for _, t in sets]))
        for _, theirs in sets:
            theirs.close()
        assert set(answer) == {"request", "sets"} and answer["request"]["seed"] == 0
        assert answer["sets"] == (["check", "warmup"] if observe else ["check", "verify"])
        assert not os.path.exists(path)  # deleted once read
        builder = harness.load(req.input_builder, req.builder_directory, "kernelgym_inputs_test")
        seeds = {"check": protocol.check_seed, "warmup": protocol.warmup_seed, "verify": protocol.verify_seed}
        for name, (mine, _) in zip(answer["sets"], sets):
            built = harness._unwrapped(harness._receive_value(mine), 0)
            for i, cfg in enumerate(req.configs):
                expected = builder(cfg, seeds[name](777, i), "cpu")
                assert torch.equal(built[i][0], expected[0]) and torch.equal(built[i][1], expected[1]), (name, i)
        assert harness._receive_value(sets[2][0]) is None  # the set not needed: nothing sent, an end of file
    finally:
        for mine, theirs in sets:
            mine.close()
            theirs.close()


def test_main_starts_cuda_while_the_inputs_are_built(tmp_path, monkeypatch):
    """CUDA's start (`_start_cuda`) runs in main while its forked child builds the seeded inputs, not after: here a
    builder waits for it, so main would stall if it came after the inputs."""
    task, req, path = _request(tmp_path, 5)
    started = tmp_path / "cuda-started"
    build = harness._build_inputs

    def build_after_cuda(*args):
        deadline = time.monotonic() + 20
        while not started.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("CUDA's start did not come while the inputs were built")
            time.sleep(0.01)
        return build(*args)

    class Prepared(Exception):
        pass

    def prepare(request, inputs):
        raise Prepared(inputs)
    monkeypatch.setattr(harness, "_build_inputs", build_after_cuda)
    monkeypatch.setattr(harness, "_start_cuda", started.touch)
    monkeypatch.setattr(harness, "prepare", prepare)
    with pytest.raises(Prepared) as got:
        harness.main(path)
    assert len(got.value.args[0]["check"]) == len(req.configs)


def test_a_set_builder_that_dies_is_an_error_for_main(tmp_path, monkeypatch):
    task, req, path = _request(tmp_path, 5)
    sets = [harness._socket_pair() for _ in range(harness._INPUT_SETS)]
    monkeypatch.setattr(harness, "_build_inputs", lambda *args: os._exit(7))
    try:
        with pytest.raises(RuntimeError, match="died"):
            harness.in_forked_child(lambda: harness._read_request_and_build(path, [t for _, t in sets]))
    finally:
        for mine, theirs in sets:
            mine.close()
            theirs.close()


def test_a_value_larger_than_the_file_size_limit_comes_back_over_several_memfds():
    # The sandbox caps a file's size (RLIMIT_FSIZE, Limits.max_file_bytes: 2 GiB), memfds included: a value's bytes
    # are spread over memfds under the cap (cross-entropy's seen configs hold 2.56 GB of inputs). Here the cap is
    # 1 MiB and the value 5 MiB, one storage of it (4 MiB) wider than a memfd.
    import resource

    def work():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        return [torch.arange(1 << 20, dtype=torch.int32), torch.arange(1 << 18, dtype=torch.float32)]

    got = harness.in_forked_child(work)
    assert torch.equal(got[0], torch.arange(1 << 20, dtype=torch.int32))
    assert torch.equal(got[1], torch.arange(1 << 18, dtype=torch.float32))


def test_received_storages_are_mapped_privately_from_their_memfd():
    # Each storage that fits in one memfd is placed inside one (the third 400 KiB one would have straddled the
    # first 1 MiB memfd's end) and mapped from it, not read into fresh memory; the mapping is private: a write to
    # a received tensor is this process's alone.
    import resource

    def work():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        return [torch.full((100 << 10,), float(i), dtype=torch.float32) for i in range(3)]

    def mapped():
        with open("/proc/self/maps") as maps:
            return sum("kernelgym-value" in line for line in maps)

    before = mapped()
    got = harness.in_forked_child(work)
    assert mapped() >= before + 2  # the two memfds the three storages lie in
    for i, t in enumerate(got):
        assert torch.equal(t, torch.full((100 << 10,), float(i))), i
    got[2][0] = -1.0
    assert got[2][0] == -1.0 and torch.equal(got[1], torch.full((100 << 10,), 1.0))


def test_the_first_failing_child_in_order_is_the_error():
    def malformed():
        raise harness.protocol.ProtocolError("bad request")

    with pytest.raises(harness.protocol.ProtocolError, match="bad request"):
        harness.in_forked_children([malformed, lambda: os._exit(3)])


def test_a_baseline_that_ran_out_of_gpu_memory_is_told_apart_before_any_candidate_runs():
    # harness.main exits before its prepared marker on it: the grading is retried or an infrastructure fault
    # (runner.py), never the kernel's 120.
    oom = ("Traceback (most recent call last):\n  File \"harness.py\", line 1\ntorch.OutOfMemoryError: CUDA out of "
           "memory. Tried to allocate 1.17 GiB. GPU 0 has a total capacity of 79.19 GiB")
    timing = [({"M": 1}, [()], (), None, object(), []), ({"M": 2}, None, None, None, oom, None)]
    assert harness.baseline_out_of_memory(SimpleNamespace(timing=timing)).startswith("torch.OutOfMemoryError: CUDA")
    broken = [({"M": 2}, None, None, None, "Traceback ...\nValueError: the task's input builder failed", None)]
    assert harness.baseline_out_of_memory(SimpleNamespace(timing=broken)) is None  # a broken task stays a failure
    assert harness.baseline_out_of_memory(SimpleNamespace(timing=None)) is None  # nothing timed


@pytest.mark.parametrize("scale", [1 / 64, 1.0, 30.0])
def test_a_timed_set_is_perturbed_relative_to_its_tensors_scale(scale):
    gen = torch.Generator().manual_seed(0)
    a = (torch.randn(512, 512, generator=torch.Generator().manual_seed(1)) * scale).half()
    moved = harness._perturb(a, gen)
    assert moved.dtype == torch.float16 and moved.shape == a.shape
    # Each element moves by 5% of itself: matmul's B (std 1/64) keeps its distribution under the noise.
    relative = (moved.float() - a.float()) / a.float()
    assert 0.045 < relative[a != 0].std().item() < 0.055
    assert abs(moved.float().std().item() / a.float().std().item() - 1) < 0.01


def test_zeros_and_masks_keep_their_structure_and_an_all_zero_tensor_still_moves():
    gen = torch.Generator().manual_seed(0)
    mask = torch.zeros(64, 64)
    mask[:, 32:] = -1e4
    moved = harness._perturb(mask, gen)
    assert torch.equal(moved[:, :32], mask[:, :32]) and (moved[:, 32:] < -5e3).all()
    zeros = harness._perturb(torch.zeros(4096), gen)
    assert 0.045 < zeros.std().item() < 0.055
    index = torch.arange(10)
    copied = harness._perturb(index, gen)
    assert torch.equal(copied, index) and copied.data_ptr() != index.data_ptr()
    assert harness._perturb(3.5, gen) == 3.5


def test_a_held_pool_restores_the_sets_it_was_drawn_as_bit_for_bit():
    built = (torch.randn(64, 96).half(), torch.randn(96, 32).bfloat16(), 7)
    gen = torch.Generator().manual_seed(11)
    gen.manual_seed(12)  # a state past its seed: the held state is the one the pool was drawn from
    drawn_from = gen.get_state()
    pool = harness.timing_pool(built, gen, 4)
    assert len(pool) == 4 and pool[0] is built
    assert not torch.equal(pool[1][0], pool[2][0]) and pool[1][2] == 7
    restored = harness.HeldPool(built, drawn_from, 4).restore("cpu")
    assert len(restored) == 4
    for sets, again in zip(pool, restored):
        for a, b in zip(sets, again):
            assert torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b


def test_a_perturbed_set_stays_within_its_dtypes_finite_range():
    gen = torch.Generator().manual_seed(0)
    big = torch.full((4096,), 65000.0, dtype=torch.float16)
    mask = torch.tensor([float("-inf"), torch.finfo(torch.float16).min, 0.0] * 1000, dtype=torch.float16)
    assert torch.isfinite(harness._perturb(big, gen)).all()
    moved = harness._perturb(mask, gen)
    # An infinity or the dtype's lowest stays the lowest finite value: a masked score stays masked, never -inf/NaN.
    assert torch.isfinite(moved).all() and (moved[0::3] == torch.finfo(torch.float16).min).all()
    assert (moved[2::3] == 0).all()


def test_a_dropped_value_frees_its_mappings_without_a_collection():
    # The unpickler's class, made per value, lives until a garbage collection; what it reached must not keep the
    # mappings (and their descriptors) of a value the harness has dropped.
    import gc

    def mapped():
        with open("/proc/self/maps") as maps:
            return sum("kernelgym-value" in line for line in maps)

    before = mapped()
    gc.disable()
    try:
        for _ in range(5):
            got = harness.in_forked_child(lambda: [torch.ones(1 << 16)])
            assert mapped() > before
            del got
        assert mapped() == before
    finally:
        gc.enable()
