"""A grading's own checked run as its observed run (`GraderConfig.observe_in_checked_run`, observing.py): under the
kernel tracer with every grading observed, the checked calls are traced in the candidate's own process and no second
process runs the kernel. What is checked here: when the grader asks for it, what the request and the sandbox carry,
that the grade reads the checked run's own trace (a real one recorded on the H200) with every verdict of an observed
run, the harness's order of calls, markers and GPU turn, and that nothing is started apart. No GPU here: the traced
run under CUDA is measured by benchmarks/gpu_issue24.sh (session8)."""
import dataclasses
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig, harness, tracer
from kernelgym.grader.observer import split
from kernelgym.grader.protocol import OUTPUTS, PROTOCOL_VERSION, ProtocolError, Request
from kernelgym.grader.runner import FreshRunner
from kernelgym.hardware import all_profiles

DATA = Path(__file__).resolve().parent / "data" / "tracer"
LIBRARY = Path("/nonexistent/libkernelgym_trace.so")


def under_tracer(g, monkeypatch, **config):
    """`g` as on an NVIDIA GPU where the kernel tracer builds (nothing is built or run here)."""
    g.config = dataclasses.replace(g.config, **{"observe_in_checked_run": True, **config})
    monkeypatch.setattr(g, "observer_unavailable", lambda: None)
    monkeypatch.setattr(g, "observer_tool", lambda: "tracer")
    g._tracer_library = LIBRARY
    return g


def test_under_the_tracer_the_checked_run_traces_itself(tmp_path, monkeypatch):
    g = under_tracer(Grader(get_task("triton-rmsnorm"), all_profiles()["h200"], tmp_path), monkeypatch)
    gdir = tmp_path / "grade-x"
    request = g._request(gdir, 1, timed=True)
    assert g.traces_checked_run and request.traced and request.observer_tool == "tracer" and not request.observe
    assert request.outputs_path == str(gdir / OUTPUTS)  # plain names: it is the grading's own run
    env = g._harness_env(gdir)
    assert env["CUDA_INJECTION64_PATH"] == str(LIBRARY) and env["KERNELGYM_TRACE_DEFERRED"] == "1"
    assert env["KERNELGYM_TRACE_FILE"] == str(gdir / tracer.TRACE_PREFIX)
    assert LIBRARY in g._readonly()
    # A run of its own (the baseline's observation) records from the start, as before.
    observed = g._observer_request(gdir, None, 1, tmp_path / "observed")
    assert observed.observe and not observed.traced
    assert tracer.env(LIBRARY, tmp_path)["KERNELGYM_TRACE_DEFERRED"] == "0"


@pytest.mark.parametrize("config, tool, profile", [
    ({"observe_fraction": 0.5}, "tracer", "h200"),  # sampled: a checked run must not know whether it is observed
    ({"observe_in_checked_run": False}, "tracer", "h200"),
    ({}, "ncu", "h200"),  # ncu serializes and flushes every kernel: the timed runs would run under it
    ({}, "tracer", "cpu-interpreter"),
])
def test_not_traced_when_sampled_switched_off_under_ncu_or_on_the_cpu(tmp_path, monkeypatch, config, tool, profile):
    g = under_tracer(Grader(get_task("triton-rmsnorm"), all_profiles()[profile], tmp_path), monkeypatch, **config)
    monkeypatch.setattr(g, "observer_tool", lambda: tool)
    request = g._request(tmp_path / "g", 1, timed=True)
    assert not g.traces_checked_run and not request.traced
    assert "CUDA_INJECTION64_PATH" not in g._harness_env(tmp_path / "g") and LIBRARY not in g._readonly()


@pytest.mark.parametrize("fields, ok", [
    ({"traced": True, "observer_tool": "tracer"}, True),
    ({"traced": True, "observer_tool": "tracer", "mode": "check"}, True),
    ({"traced": True, "observer_tool": "ncu"}, False),
    ({"traced": True, "observer_tool": "tracer", "mode": "time"}, False),
    ({"traced": True, "observer_tool": "tracer", "mode": "check", "observe": True}, False),
])
def test_the_protocol_takes_a_traced_run_only_as_a_gradings_own_under_the_tracer(fields, ok):
    base = {"protocol_version": PROTOCOL_VERSION, "mode": "grade", "language": "triton", "directory": "/g",
            "entry_point": "kernel.py:f", "input_builder": "inputs.py:build", "builder_directory": "/b",
            "configs": [{}], "seed": 1, "device": "cuda", "outputs": [{"name": "y", "arg": None}]}
    if ok:
        assert Request.from_json({**base, **fields}).traced
    else:
        with pytest.raises(ProtocolError, match="traced"):
            Request.from_json({**base, **fields})


def traced_grader(fake_grader, monkeypatch, traces, baseline="rmsnorm_fast.trace"):
    """A `fake_grader` under the tracer whose checked run leaves `traces` (texts) in its grading directory, and whose
    baseline observation is the recorded `baseline` trace. No run apart may start."""
    g = under_tracer(fake_grader([(0.05, 0.05)] * 5), monkeypatch)
    run_harness = g._run_harness

    def traced_run(gdir, seed):
        for i, text in enumerate(traces):
            (gdir / f"{tracer.TRACE_PREFIX}.{100 + i}").write_text(text)
        return run_harness(gdir, seed)
    monkeypatch.setattr(g, "_run_harness", traced_run)
    base_dir = g.work_dir / "baseline-trace"
    base_dir.mkdir()
    shutil.copy(DATA / baseline, base_dir / f"{tracer.TRACE_PREFIX}.2")
    observed = split(tracer.parse_trace(base_dir, Path.read_bytes), 5, flushed=True)
    monkeypatch.setattr(g, "baseline_observation", lambda: observed)
    monkeypatch.setattr(g, "_observed_run", lambda *a, **k: pytest.fail("a run apart was started"))
    return g


def test_the_grade_reads_the_checked_runs_own_trace(fake_grader, monkeypatch):
    g = traced_grader(fake_grader, monkeypatch, [(DATA / "rmsnorm_fast.trace").read_text()])
    grade = g.grade(g.task.root, seed=1)
    assert g.session.traced and g.session.observer_ahead == "traced in the checked run"
    assert grade.correct and grade.checks["observer"] == "passed", grade.checks
    assert all(row["observed_ms"] > 0 for row in grade.configs)


def test_a_traced_library_kernel_fails_the_grade(fake_grader, monkeypatch):
    text = (DATA / "rmsnorm_fast.trace").read_text().splitlines()
    # The fourth config's checked call ran a cuBLAS kernel beside its own (the last rmsnorm_kernel before the end).
    last = max(i for i, line in enumerate(text) if line.endswith("\trmsnorm_kernel"))
    start, end, corr, _ = text[last].split("\t")
    text.insert(last + 1, f"{int(end) + 1}\t{int(end) + 50}\t{int(corr) + 1000}\tsm90_xmma_gemm_f16f16_f32")
    text[-1] = "end " + str(int(text[-1].split()[1]) + 1) + " 0"
    g = traced_grader(fake_grader, monkeypatch, ["\n".join(text) + "\n"])
    grade = g.grade(g.task.root, seed=1)
    assert not grade.correct and grade.checks["observer"] == "failed" and grade.score == 20.0
    assert any("sm90_xmma" in (row.get("error") or "") for row in grade.configs)


@pytest.mark.parametrize("traces, why", [
    ([], "wrote no trace"),
    (["kernelgym-trace 1 5\n", "kernelgym-trace 1 6\nend 0 0\n"], "2 processes"),
    (["kernelgym-trace 1 5\n1\t2\t1\trmsnorm_kernel\n"], "incomplete"),
])
def test_a_missing_second_or_unfinished_trace_fails_the_grade(fake_grader, monkeypatch, traces, why):
    g = traced_grader(fake_grader, monkeypatch, traces)
    grade = g.grade(g.task.root, seed=1)
    assert not grade.correct and why in grade.checks["observer"], grade.checks["observer"]
    assert grade.outcome != "infra_fault"  # the candidate's process ran: its trace is its own


def test_a_fresh_run_removes_the_trace_a_dead_prepared_child_left(tmp_path, monkeypatch):
    gdir = tmp_path / "g"
    gdir.mkdir()
    (gdir / f"{tracer.TRACE_PREFIX}.7").write_text("kernelgym-trace 1 7\n")  # its CUDA started, then it died
    seen = {}

    class Sandbox:
        def run(self, argv, limits=None):
            seen["traces"] = sorted(p.name for p in gdir.glob(tracer.TRACE_PREFIX + ".*"))
            return SimpleNamespace(output="", returncode=1, timed_out=False)
    request = SimpleNamespace(traced=True, to_json=lambda: {"traced": True})
    FreshRunner(request, Sandbox(), 10.0, True, False).run(gdir)
    assert seen["traces"] == []


def test_nothing_is_started_apart_when_the_checked_run_is_traced(tmp_path, monkeypatch):
    g = under_tracer(Grader(get_task("triton-rmsnorm"), all_profiles()["h200"], tmp_path), monkeypatch)
    started = []
    monkeypatch.setattr(g, "_new_worker", lambda gdir: SimpleNamespace(stop=lambda: None, alive=lambda: True))
    monkeypatch.setattr(g, "_start_observed_run", lambda *a: started.append(a))
    g.spawn()
    assert started == [] and g._spare.ahead is None
    g._spare = None
    g.config = dataclasses.replace(g.config, observe_in_checked_run=False)
    g.spawn()
    assert len(started) == 1  # a run of its own, started ahead, as before
    # A traced session given to the observer's background work gets no run ahead either.
    monkeypatch.setattr(g, "baseline_observation", lambda: None)
    g.config = dataclasses.replace(g.config, observe_in_checked_run=True)
    killed = []
    monkeypatch.setattr("kernelgym.grader.observing.kill_group", lambda proc: killed.append(proc))
    g._prepare_observer(SimpleNamespace(traced=True, gdir=tmp_path, seed=1), True, object(),
                        SimpleNamespace(proc="spawned"))
    assert killed == ["spawned"] and len(started) == 1 and g._observing is None


def test_the_harness_traces_the_checked_calls_alone_and_holds_the_gpu_for_them(tmp_path, monkeypatch):
    """A traced request's check on the CPU with the GPU's parts recorded: a warm-up call per config (where a traced run
    compiles), then the GPU's turn, the checked calls one marker apart, the last marker, the trace's flush, and the
    turn let go; outputs under their plain names."""
    events = []
    monkeypatch.setattr(harness, "_marker", lambda first=False: events.append("marker"))
    monkeypatch.setattr(harness, "_flush_trace", lambda: events.append("flush"))

    class Turn:
        def __init__(self, shared):
            self.name = "shared turn" if shared else "turn"

        def __enter__(self):
            events.append(self.name)
            return {"held": True, "waited_s": 0.0}

        def __exit__(self, *exc):
            events.append(self.name + " released")
    monkeypatch.setattr(harness, "gpu_turn", lambda req, shared=False: Turn(shared))
    import torch

    def fn(x):
        events.append(("call", float(x[0])))
        return x * 2
    req = Request(mode="grade", language="triton", directory=str(tmp_path), entry_point="kernel.py:f",
                  input_builder="inputs.py:build", builder_directory=str(tmp_path), configs=[{}, {}], seed=1,
                  device="cpu", outputs=[harness.protocol.OutputSlot("y", None)], traced=True, observer_tool="tracer",
                  require_own_launch=False)
    backend = SimpleNamespace(LaunchCounter=None, is_compile_error=lambda exc: False)
    check = [(torch.full((2,), 1.0),), (torch.full((2,), 2.0),)]
    warmup = [(torch.full((2,), 10.0),), (torch.full((2,), 20.0),)]
    res = harness.check(req, fn, check, backend, warmup)
    # The warm-up calls (candidate code: a compile, an autotune) hold no part of the schedule; the checked calls
    # hold the turn.
    assert events == [("call", 10.0), ("call", 20.0), "marker", "turn", ("call", 1.0), "marker", ("call", 2.0),
                      "marker", "flush", "turn released"]
    assert res["ok"] and res["gpu_turn"]["held"] and (tmp_path / OUTPUTS).is_file()


@pytest.mark.parametrize("traced", [True, False])
def test_a_traced_run_builds_the_warm_up_inputs_too(traced):
    task = get_task("triton-rmsnorm")
    req = Request(mode="grade", language="triton", directory=str(task.root), entry_point=task.spec.entry_point,
                  input_builder=task.spec.input_builder, builder_directory=str(task.root),
                  configs=task.configs_for(True), seed=1, device="cpu", outputs=[harness.protocol.OutputSlot("y", None)],
                  baseline_directory=str(task.root), traced=traced, observer_tool="tracer")
    assert list(harness.input_set_builds(req)) == ["check", *(["warmup"] if traced else []), "verify"]


# -- 1. a trace over MAX_TRACE_BYTES escapes observe() as UntrustedFileError: the grade (and env.step) raises --------
def test_an_oversized_trace_refuses_the_kernel_not_crash_the_grade(fake_grader, monkeypatch):
    g = traced_grader(fake_grader, monkeypatch, [(DATA / "rmsnorm_fast.trace").read_text()])
    # Stand-in for a candidate that launches enough (long-named) kernels in its warm-up to pass 512 MiB: the real
    # cap is lowered instead of writing 512 MiB here. RLIMIT_FSIZE in the sandbox is 2 GiB, so such a trace is written.
    monkeypatch.setattr("kernelgym.grader.observing.MAX_TRACE_BYTES", 1000)
    grade = g.grade(g.task.root, seed=1)
    assert not grade.correct and grade.checks["observer"].startswith("failed")


# -- 2. the tracer -> ncu fallback (baseline_observation, observer_tool 'auto') after a session was started traced ----
def test_tool_flip_after_a_traced_session_does_not_refuse_an_honest_kernel(fake_grader, monkeypatch):
    g = fake_grader([(0.05, 0.05)] * 5)
    g.config = dataclasses.replace(g.config, observe_in_checked_run=True)
    monkeypatch.setattr("kernelgym.grader.observing.gpu_devices", lambda: ["/dev/nvidia0"])
    g._tool, g._tracer_library = "tracer", LIBRARY
    seen, run_harness = {}, g._run_harness
    from kernelgym.grader import tracer
    from kernelgym.grader.observer import split
    base_dir = g.work_dir / "baseline-trace"
    base_dir.mkdir(parents=True)
    (base_dir / f"{tracer.TRACE_PREFIX}.2").write_bytes((DATA / "rmsnorm_fast.trace").read_bytes())
    baseline = split(tracer.parse_trace(base_dir, Path.read_bytes), 5, flushed=True)

    def flipped(gdir, seed):
        # baseline_observation() in the observer thread (joined by _wait_for_observer just before) found CUPTI refused
        # at run time and switched this grader to ncu; the warm worker's child then died unprepared, and the fresh
        # run's request and environment are made now (Grader._run_harness.fresh).
        g._tool = "ncu"
        seen["traced"] = g._request(gdir, seed, True).traced
        seen["env"] = g._harness_env(gdir)
        return run_harness(gdir, seed)  # an untraced harness leaves no trace
    monkeypatch.setattr(g, "_run_harness", flipped)
    monkeypatch.setattr(g, "baseline_observation", lambda: baseline)  # ncu observes the baseline fine
    apart = []

    def observed_run(session, sources, started=None):  # a run of its own, under ncu: its outputs the checked ones
        apart.append(session.gdir)
        g._observed_outputs = session.gdir / OUTPUTS
        return baseline
    monkeypatch.setattr(g, "_observed_run", observed_run)
    grade = g.grade(g.task.root, seed=1)
    assert g.session.traced and seen["traced"] is False and "CUDA_INJECTION64_PATH" not in seen["env"]
    assert grade.correct and len(apart) == 1, grade.checks["observer"]  # a run of its own, under ncu, observed it


def test_a_trace_that_never_started_recording_is_not_the_kernels_fault(fake_grader, monkeypatch):
    # What a traced process leaves where cuptiActivityEnable failed at the first marker (deferred mode): the header,
    # no record, and the end line the harness's flush writes.
    g = traced_grader(fake_grader, monkeypatch, ["kernelgym-trace 1 5\nend 0 0\n"])
    grade = g.grade(g.task.root, seed=1)
    assert "candidate launched the marker kernel itself" not in grade.checks["observer"]
    assert grade.outcome == "infra_fault" and grade.score == 0.0 and "recorded nothing" in grade.checks["observer"]


# -- 3. a sticky CUDA error in a checked call: the marker after it raises out of check(), no result is written --------
def _request(tmp_path, traced):
    return Request(mode="grade", language="triton", directory=str(tmp_path), entry_point="kernel.py:f",
                   input_builder="inputs.py:build", builder_directory=str(tmp_path), configs=[{}, {}], seed=1,
                   device="cpu", outputs=[harness.protocol.OutputSlot("y", None)], traced=traced,
                   observer_tool="tracer" if traced else "ncu", require_own_launch=False)


@pytest.mark.parametrize("traced", [False, True])
def test_a_sticky_cuda_error_still_gives_per_config_errors(tmp_path, monkeypatch, traced):
    import torch
    broken = {"on": False}

    def sticky():  # torch.cuda.synchronize after an illegal memory access: raises from then on
        if broken["on"]:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
    monkeypatch.setattr(harness, "_synchronize", lambda: sticky())
    monkeypatch.setattr(harness, "_sleep", lambda n: None)
    monkeypatch.setattr(harness, "_flush_trace", lambda: None)

    def fn(x):
        sticky()
        broken["on"] = True
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    backend = type("B", (), {"LaunchCounter": None, "is_compile_error": staticmethod(lambda exc: False)})
    inputs = [(torch.ones(2),), (torch.ones(2),)]
    res = harness.check(_request(tmp_path, traced), fn, inputs, backend, inputs if traced else ())
    assert res["stage"] == "check" and [c["ok"] for c in res["configs"]] == [False, False]


# -- 4. unseen evaluation: one Grader, configs changed per grading, but the baseline's key is kept from the first ----
def test_the_baseline_key_follows_the_configs(tmp_path, monkeypatch):
    from kernelgym.discovery import get_task
    from kernelgym.grader import Grader
    from kernelgym.hardware import all_profiles
    task = get_task("triton-rmsnorm")
    g = under_tracer(Grader(task, all_profiles()["h200"], tmp_path, configs=[]), monkeypatch)
    cfgs = task.configs_for(False)
    g.configs = [cfgs[0]]  # as kernelgym.unseen.evaluate._grade_each sets it per unseen config
    first = g._baseline_key()
    g.configs = [cfgs[-1]]
    assert g._baseline_key() != first  # else config k's cross-check uses config 0's observed baseline times


# -- 5. the grade's checks still say the run-apart defences are in force when the checked run observes itself -------
def test_run_apart_defences_are_off_when_traced(fake_grader, monkeypatch):
    g = traced_grader(fake_grader, monkeypatch, [(DATA / "rmsnorm_fast.trace").read_text()])
    grade = g.grade(g.task.root, seed=1)
    states = {k: v for k, v in grade.checks.get("defences", grade.checks).items()
              if k in ("observed_run_reads_sources_first", "early_observer_death_is_infra", "kernel_artifacts_only",
                       "observed_cache_copy_bounded")}
    assert states and all(str(v).startswith("off") for v in states.values()), states
