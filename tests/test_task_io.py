"""Task I/O beyond one returned tensor, graded from task folders written here: an output written in place into an
argument, an integer output compared exactly, set comparison, and a task whose tolerance lets zeros pass refused."""
import os
import textwrap

import pytest
import torch

from kernelgym.errors import TaskSpecError
from kernelgym.grader import Grader, GraderConfig
from kernelgym.grader.compare import compare_output, prepare_reference, trivial_output_passes
from kernelgym.hardware import detect_profile
from kernelgym.task import Tolerance, load_task

HEADER = """
language: triton
kind: triton2triton
version: 0
description: test task
editable_files: [kernel.py]
reference: reference.py:reference
input_builder: reference.py:make_inputs
seen_configs: [{n: 64, dtype: float32}]
interpreter_configs: [{n: 37, dtype: float32}, {n: 130, dtype: float32}]
config_space: {dims: {n: {min: 1, max: 4096}}, dtypes: [float32]}
tolerance: {float32: {atol: 1.0e-5, rtol: 1.0e-5}}
"""

SCALE_INTO = """
import triton, triton.language as tl

@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * FACTOR, mask=offs < n)

FACTOR = 2.0

def scale_into(x, out):
    scale_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
"""

ARGMAX = """
import torch, triton, triton.language as tl

@triton.jit
def argmax_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=offs < n, other=-float("inf"))
    tl.store(out_ptr + tl.program_id(0), tl.argmax(x, axis=0).to(tl.int64) + SHIFT)

SHIFT = 0

def argmax(x):
    out = torch.empty(x.shape[0], dtype=torch.int64, device=x.device)
    argmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return out
"""


def make_task(tmp_path, name, extra_yaml, kernel, reference):
    d = tmp_path / name
    d.mkdir()
    (d / "task.yaml").write_text(f"id: {name}\n" + textwrap.dedent(HEADER) + textwrap.dedent(extra_yaml))
    (d / "kernel.py").write_text(kernel)
    (d / "reference.py").write_text(textwrap.dedent(reference))
    return load_task(d)


def grade(task, tmp_path, kernel=None):
    ws = tmp_path / "ws"
    if ws.exists():
        import shutil
        shutil.rmtree(ws)
    ws.mkdir()
    for rel in task.public_files():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes((task.root / rel).read_bytes())
    if kernel is not None:
        (ws / "kernel.py").write_text(kernel)
    g = Grader(task, detect_profile("cpu-interpreter"), tmp_path / f"grading-{len(list(tmp_path.iterdir()))}",
               GraderConfig(warm_worker=False))
    return g.grade(ws, seed=1)


def test_an_output_written_in_place_into_an_argument_is_graded(tmp_path, require_bwrap):
    task = make_task(tmp_path, "scale-into", """
        entry_point: kernel.py:scale_into
        outputs: [{name: out, arg: 1}]
        """, SCALE_INTO, """
        import torch
        def make_inputs(config, seed, device="cpu"):
            g = torch.Generator().manual_seed(seed)
            x = torch.randn(config["n"], generator=g)
            return x.to(device), torch.zeros(config["n"]).to(device)
        def reference(x, out):
            return 2.0 * x.float()
        """)
    assert grade(task, tmp_path).score == 120.0
    wrong = grade(task, tmp_path, SCALE_INTO.replace("FACTOR = 2.0", "FACTOR = 3.0"))
    assert wrong.score == 20.0 and not wrong.correct
    lazy = grade(task, tmp_path, SCALE_INTO.replace("tl.store(", "pass  # tl.store("))  # writes nothing into out
    assert lazy.score == 20.0


def test_an_integer_output_is_compared_exactly(tmp_path, require_bwrap):
    task = make_task(tmp_path, "argmax", """
        entry_point: kernel.py:argmax
        seen_configs: [{rows: 4, n: 64, dtype: float32}]
        interpreter_configs: [{rows: 3, n: 37, dtype: float32}, {rows: 5, n: 130, dtype: float32}]
        config_space: {dims: {rows: {min: 1, max: 64}, n: {min: 1, max: 4096}}, dtypes: [float32]}
        outputs: [{name: index, dtype: int64}]
        """.replace("seen_configs", "seen_configs").strip("\n"), ARGMAX, """
        import torch
        def make_inputs(config, seed, device="cpu"):
            g = torch.Generator().manual_seed(seed)
            return (torch.randn(config["rows"], config["n"], generator=g).to(device),)
        def reference(x):
            return x.argmax(dim=-1)
        """)
    assert task.spec.outputs[0].rule_for(task.spec.interpreter_configs[0]) == "exact"
    assert grade(task, tmp_path).score == 120.0
    off_by_one = grade(task, tmp_path, ARGMAX.replace("SHIFT = 0", "SHIFT = 1"))
    assert off_by_one.score == 20.0
    assert "differ (exactly)" in "\n".join(off_by_one.stages[1].messages)


def test_a_task_whose_tolerance_lets_zeros_pass_is_refused(tmp_path, require_bwrap):
    task = make_task(tmp_path, "tiny-values", """
        entry_point: kernel.py:scale_into
        outputs: [{name: out, arg: 1}]
        """, SCALE_INTO, """
        import torch
        def make_inputs(config, seed, device="cpu"):
            return torch.zeros(config["n"]).to(device), torch.zeros(config["n"]).to(device)
        def reference(x, out):
            return 2.0 * x.float()
        """)
    with pytest.raises(TaskSpecError, match="all-zero output passes"):
        grade(task, tmp_path)


def test_set_comparison_ignores_order_along_the_last_dimension_only():
    ref = torch.tensor([[3, 1, 2], [0, 5, 4]])
    prepared = prepare_reference(ref, None, "set")
    assert compare_output(ref[:, [2, 0, 1]], prepared, "int64", "set")[0]
    assert not compare_output(ref[[1, 0]], prepared, "int64", "set")[0]  # rows swapped: not the same sets per row
    assert not compare_output(ref[:, [2, 0, 1]], ref, "int64", "exact")[0]
    assert "dtype" in compare_output(ref.int(), prepared, "int64", "set")[1]


def test_trivial_outputs_are_detected_per_rule():
    tol = Tolerance(atol=1e-2, rtol=1e-2)
    assert trivial_output_passes(prepare_reference(torch.randn(8, 8), tol), "float32", tol) is None
    assert "all-zero" in trivial_output_passes(prepare_reference(torch.zeros(8, 8), tol), "float32", tol)
    assert "constant" in trivial_output_passes(prepare_reference(torch.full((8,), 7), None, "exact"), "int64")
    assert trivial_output_passes(prepare_reference(torch.arange(8), None, "exact"), "int64") is None


def test_the_reference_process_gives_what_the_reference_gives_in_process(tmp_path):
    # The process a GPU reference runs in (here on the CPU): the same outputs as in this process, in declared order.
    from kernelgym.discovery import get_task
    from kernelgym.grader.reference import reference_outputs, run_reference_process
    task = get_task("triton-fused-add-rmsnorm")
    jobs = [(task.spec.interpreter_configs[0], 3), (task.spec.interpreter_configs[1], 4)]
    outs = run_reference_process(task, jobs, tmp_path, device="cpu")
    for (cfg, seed), got in zip(jobs, outs):
        want = reference_outputs(task, cfg, seed)
        assert len(got) == 2 and all(torch.equal(g, w) for g, w in zip(got, want))


def test_fp8_outputs_are_compared_under_their_tolerance():
    # PyTorch does no arithmetic on float8 tensors: the comparison converts them, rather than failing honest kernels.
    tol = Tolerance(atol=0.1, rtol=0.1)
    ref = torch.randn(16, 32)
    ok, msg, _ = compare_output(ref.to(torch.float8_e4m3fn), ref, "float8_e4m3fn", "tolerance", tol)
    assert ok, msg
    assert not compare_output((ref * 2).to(torch.float8_e4m3fn), ref, "float8_e4m3fn", "tolerance", tol)[0]
    assert "dtype" in compare_output(ref.half(), ref, "float8_e4m3fn", "tolerance", tol)[1]


def test_a_one_element_output_is_not_refused_as_constant():
    """A single value is its own mean: only an all-zero output counts as trivial there (a decode config with one token
    has one argmax, one scale)."""
    from kernelgym.task import Tolerance
    tol = Tolerance(atol=1e-3, rtol=1e-3)
    assert trivial_output_passes(prepare_reference(torch.tensor([3.5]), tol), "float32", tol) is None
    assert "all-zero" in trivial_output_passes(prepare_reference(torch.tensor([0.0]), tol), "float32", tol)
    assert "constant" in trivial_output_passes(prepare_reference(torch.full((4,), 3.5), tol), "float32", tol)


def test_references_run_on_the_gpu_only_where_this_process_can_use_it(monkeypatch):
    # GraderConfig.references_on_gpu: on the GPU where CUDA is usable here; in a process forked after CUDA started
    # (an AsyncVectorEnv worker of a trainer that uses the GPU) or without a GPU, on the CPU, with the same outputs.
    from kernelgym.discovery import get_task
    from kernelgym.grader import reference as ref_mod
    task = get_task("triton-rmsnorm")
    jobs = [(task.spec.interpreter_configs[0], 3)]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: True)
    assert not ref_mod.cuda_usable()
    refs = ref_mod.References(task, jobs, gpu=True, on_gpu=True)
    assert refs.device == "cpu"
    got = refs.get(*jobs[0])[0]
    assert got.values.device.type == "cpu"
    assert torch.equal(got.values, ref_mod.reference_outputs(task, *jobs[0])[0].float())
    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: False)
    assert ref_mod.cuda_usable()
    assert ref_mod.References(task, [], gpu=True, on_gpu=False).device == "cpu"  # asked for the CPU
    assert ref_mod.References(task, [], gpu=False, on_gpu=True).device == "cpu"  # no GPU grades here
    assert ref_mod.References(task, [], gpu=True, on_gpu=True).device == "cuda"


def test_a_candidate_output_is_compared_where_the_reference_is_held():
    # The output comes from a file, on the CPU; the comparison moves it to the reference's device (the GPU where
    # references are computed there), and still refuses outputs that are not dense CPU tensors as loaded.
    from kernelgym.task import Tolerance
    tol = Tolerance(atol=1e-3, rtol=1e-3)
    ref = prepare_reference(torch.randn(8, 16), tol)
    ok, msg, _ = compare_output(ref.values.clone(), ref, "float32", "tolerance", tol)
    assert ok, msg
    assert not compare_output(ref.values + 1, ref, "float32", "tolerance", tol)[0]
    assert "dense real tensor" in compare_output(ref.values.to_sparse(), ref, "float32", "tolerance", tol)[1]
    exact = prepare_reference(torch.arange(6).reshape(2, 3), None, "exact")
    assert compare_output(torch.arange(6).reshape(2, 3), exact, "int64", "exact")[0]


def test_a_reference_the_gpu_fails_is_computed_on_the_cpu(monkeypatch):
    # Out of memory beside the candidates' processes must not fail a grading: the reference is computed again on
    # the CPU (a reference broken on the CPU too still raises there).
    from kernelgym.discovery import get_task
    from kernelgym.grader import reference as ref_mod
    task = get_task("triton-rmsnorm")
    cfg = task.spec.interpreter_configs[0]
    real = ref_mod.reference_outputs
    asked = []

    def on(task_, config, seed, device="cpu", turn=None):
        asked.append(device)
        if device != "cpu":
            raise RuntimeError("CUDA out of memory (simulated)")
        return real(task_, config, seed, device)

    monkeypatch.setattr(ref_mod, "reference_outputs", on)
    monkeypatch.setattr(ref_mod, "cuda_usable", lambda: True)
    refs = ref_mod.References(task, [(cfg, 5)], gpu=True, on_gpu=True)
    assert refs.device == "cuda"
    got = refs.get(cfg, 5)[0]
    assert asked[:2] == ["cuda", "cpu"] and got.values.device.type == "cpu"
    assert torch.equal(got.values, real(task, cfg, 5)[0].float())


def test_a_comparison_the_gpu_fails_is_made_on_the_cpu(monkeypatch):
    from kernelgym.grader import compare as cmp
    from kernelgym.task import Tolerance
    tol = Tolerance(atol=1e-3, rtol=1e-3)
    cpu_ref = prepare_reference(torch.randn(4, 8), tol)
    on_device = cmp.PreparedReference(torch.empty(4, 8, device="meta"), None, cpu_ref.norm)  # stands for the GPU
    monkeypatch.setattr(cmp, "on_cpu", lambda ref: cpu_ref if ref is on_device else ref)
    ok, msg, _ = cmp.compare_output(cpu_ref.values.clone(), on_device, "float32", "tolerance", tol)
    assert ok, msg
    assert not cmp.compare_output(cpu_ref.values + 1, on_device, "float32", "tolerance", tol)[0]
    monkeypatch.undo()
    moved = cmp.on_cpu(cmp.PreparedReference(cpu_ref.values, cpu_ref.bound, cpu_ref.norm, torch.ones(4, 8).bool()))
    assert moved.values.device.type == moved.bound.device.type == moved.finite.device.type == "cpu"


def test_a_reference_without_its_bound_held_compares_as_one_with_it():
    # On a GPU the references are held without their elementwise bound (computed at each comparison): the verdicts
    # and messages must be the same as with the bound held, NaN in the reference and outputs off by a hair included.
    from kernelgym.grader import compare as cmp
    from kernelgym.task import Tolerance
    tol = Tolerance(atol=1e-2, rtol=1e-2)
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(64, 33, generator=g)
    ref[3, 5] = float("nan")
    held, lazy = prepare_reference(ref, tol), prepare_reference(ref, tol, keep_bound=False)
    assert lazy.bound is None and held.bound is not None and (lazy.atol, lazy.rtol) == (tol.atol, tol.rtol)
    bound = ref.abs() * tol.rtol + tol.atol
    outs = [ref.clone(), ref + 0.9 * bound, ref + 1.1 * bound, torch.zeros_like(ref), ref.half()]
    for out in outs:
        want = repr(cmp.compare_output(out, held, "float32", "tolerance", tol))  # repr: NaN == NaN
        assert repr(cmp.compare_output(out, lazy, "float32", "tolerance", tol)) == want
        assert repr(cmp.compare_output(out, cmp.on_cpu(lazy), "float32", "tolerance", tol)) == want
    assert [cmp.compare_output(o, lazy, "float32", "tolerance", tol)[0] for o in outs] == [True, True, False, False,
                                                                                           False]
    # Neither the bound nor the tolerance: never compared exactly by default, an error (a failed comparison).
    bare = cmp.PreparedReference(lazy.values, None, lazy.norm)
    ok, msg, _ = cmp.compare_output(ref.clone(), bare, "float32", "tolerance", tol)
    assert not ok and "neither its elementwise bound nor its tolerance" in msg


def test_the_trivial_output_check_the_gpu_fails_is_made_on_the_cpu(monkeypatch):
    # The task's trivial-output check runs on the references where they are held; a GPU out of memory there (the
    # candidates' processes beside it) raised out of References and failed the task (TaskSpecError from the step).
    from kernelgym.grader import compare as cmp
    from kernelgym.task import Tolerance
    tol = Tolerance(atol=1e-3, rtol=1e-3)
    cpu_ref = prepare_reference(torch.randn(4, 8), tol)
    on_device = cmp.PreparedReference(torch.empty(4, 8, device="meta"), None, cpu_ref.norm)  # stands for the GPU
    monkeypatch.setattr(cmp, "on_cpu", lambda ref: cpu_ref if ref is on_device else ref)
    assert cmp.trivial_output_passes(on_device, "float32", tol) is None
    loose = prepare_reference(torch.full((4, 8), 0.5), Tolerance(atol=10.0, rtol=0.0))
    on_device = cmp.PreparedReference(torch.empty(4, 8, device="meta"), None, loose.norm)
    monkeypatch.setattr(cmp, "on_cpu", lambda ref: loose if ref is on_device else ref)
    assert "passes the comparison" in cmp.trivial_output_passes(on_device, "float32", Tolerance(atol=10.0, rtol=0.0))


def test_a_reference_process_the_gpu_fails_is_computed_on_the_cpu(monkeypatch, tmp_path):
    # A `reference_device: cuda` task's reference process runs while the agent works, beside the agent's own GPU
    # commands: one that fills the GPU made it fail, and its TaskSpecError left the env's step at the submit.
    from kernelgym.discovery import get_task
    from kernelgym.errors import TaskSpecError
    from kernelgym.grader import reference as ref_mod
    task = get_task("triton-rmsnorm")
    monkeypatch.setattr(task.spec, "reference_device", "cuda")
    cfg = task.spec.interpreter_configs[0]

    def oom(*_a, **_k):
        raise TaskSpecError("the reference process failed (exit 1):\ntorch.OutOfMemoryError: CUDA out of memory")
    monkeypatch.setattr(ref_mod, "run_reference_process", oom)
    refs = ref_mod.References(task, [(cfg, 5)], gpu=True, work_dir=tmp_path)
    got = refs.get(cfg, 5)[0]
    assert torch.equal(got.values, ref_mod.reference_outputs(task, cfg, 5)[0].float())

    def broken(task_, config, seed, device="cpu"):
        raise RuntimeError("the reference is broken")
    monkeypatch.setattr(ref_mod, "reference_outputs", broken)
    with pytest.raises(TaskSpecError, match="broken"):
        ref_mod.References(task, [(cfg, 5)], gpu=True, work_dir=tmp_path).wait()


def test_the_grade_says_whether_the_reference_process_gave_the_references(monkeypatch):
    # checks' private_reference_scratch_dir is in force only where the trusted GPU process computed them.
    from kernelgym.discovery import get_task
    from kernelgym.errors import TaskSpecError
    from kernelgym.grader import reference as ref_mod
    task = get_task("triton-paged-attention-decode")
    assert task.spec.reference_device == "cuda"
    cfg = task.configs_for(True)[0]  # with its derived dims
    monkeypatch.setattr(ref_mod, "run_reference_process",
                        lambda task_, jobs, work_dir: [ref_mod.reference_outputs(task_, c, s) for c, s in jobs])
    refs = ref_mod.References(task, [(cfg, 2)], gpu=True)
    refs.wait()
    assert refs.used_process

    def fails(*a, **k):
        raise TaskSpecError("the reference process failed (out of memory)")

    monkeypatch.setattr(ref_mod, "run_reference_process", fails)
    refs = ref_mod.References(task, [(cfg, 2)], gpu=True)
    refs.wait()
    assert not refs.used_process and refs.get(cfg, 2)


def test_a_directory_the_walk_cannot_list_fails_the_disk_check(tmp_path, monkeypatch):
    # A non-root sandbox runs as the grader's uid: a candidate can chmod a directory 000 and hide what it holds.
    from kernelgym.grader import files
    from kernelgym.grader.checks import disk_check
    from kernelgym.grader.grade import GraderConfig
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / "big").write_bytes(b"x" * 4096)
    real = os.scandir

    def scandir(path):
        if str(path).endswith("hidden"):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(files.os, "scandir", scandir)
    used = files.tree_usage(tmp_path, 1 << 30, 1000)
    assert used.unreadable == 1
    assert disk_check(used, GraderConfig()).startswith("failed: the candidate's process left 1 directories")
    monkeypatch.setattr(files.os, "scandir", real)
    assert files.tree_usage(tmp_path, 1 << 30, 1000).unreadable == 0


def test_references_stop_when_cancelled_and_the_process_waits_for_them(monkeypatch):
    # The background thread is not a daemon (a process exiting while it is inside torch aborts: 'terminate called
    # without an active exception', exit 134); `cancel` stops it after its current job, and `wait` computes the rest.
    import threading

    from kernelgym.discovery import get_task
    from kernelgym.grader import reference as ref_mod
    task = get_task("triton-rmsnorm")
    jobs = [(cfg, seed) for cfg in task.spec.interpreter_configs for seed in (1, 2)]
    gate, computed = threading.Event(), []
    real = ref_mod.References._prepared

    def slow(self, config, seed):
        gate.wait(30)
        computed.append((config["hidden"], seed))
        return real(self, config, seed)
    monkeypatch.setattr(ref_mod.References, "_prepared", slow)
    refs = ref_mod.References(task, jobs)
    assert not refs._thread.daemon
    refs.cancel()
    gate.set()
    refs._thread.join(30)
    assert not refs._thread.is_alive() and len(computed) <= 1  # stopped after the job it was in
    refs.wait()  # the rest, here
    assert sorted(computed) == sorted((c["hidden"], s) for c, s in jobs)
    plain = ref_mod.References(task, jobs)
    for cfg, seed in jobs:
        assert all(torch.equal(a.values, b.values) for a, b in zip(refs.get(cfg, seed), plain.get(cfg, seed)))


def test_a_process_that_exits_right_after_reset_exits_cleanly(tmp_path):
    # Found by a breaker: `env.reset()` then exit aborted with exit 134 about half the time on triton-matmul (the
    # references' thread was still inside torch when the interpreter finalized).
    import subprocess
    import sys
    code = ("import gymnasium as gym, kernelgym\n"
            f"env = gym.make('KernelArena/triton-matmul-v0', run_dir={str(tmp_path)!r})\n"
            "env.reset(seed=0)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "terminate called" not in run.stderr, run.stderr[-2000:]


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64", "bfloat16"])
def test_a_forked_builders_set_of_any_dtype_comes_back(dtype):
    """The forked input builders' sets reach the harness whatever their dtype (torch.save's legacy format, tried on
    2026-12-07 for speed, lost float8 and uint16-64 tensors: a review found it)."""
    import importlib.util
    from pathlib import Path

    import torch
    spec = importlib.util.spec_from_file_location(
        "kg_harness_dtypes", Path(__file__).resolve().parents[1] / "kernelgym" / "grader" / "harness.py")
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    x = torch.zeros(8).to(getattr(torch, dtype))
    (back,) = harness.in_forked_child(lambda: (x,))
    assert back.dtype == x.dtype and torch.equal(back.float(), x.float())
