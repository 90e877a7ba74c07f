"""Review of 09365d8 (the checked run traced as the observed one): concrete problems, shown on the CPU with fake traces.

Each test states the behaviour the design wants; those that fail on 09365d8 are marked xfail(strict=True) with the
finding's number, so a fix turns them into XPASS (then drop the marker)."""
import dataclasses
from pathlib import Path

import pytest

from kernelgym.grader import harness
from kernelgym.grader.protocol import Request
from kernelgym.grader.untrusted import UntrustedFileError

from test_traced_checked_run import DATA, LIBRARY, traced_grader, under_tracer  # noqa: F401 - helpers reused


# -- 1. a trace over MAX_TRACE_BYTES escapes observe() as UntrustedFileError: the grade (and env.step) raises --------
@pytest.mark.xfail(strict=True, raises=UntrustedFileError,
                   reason="finding 1: _traced_observation does not turn UntrustedFileError into ObserverError")
def test_review_an_oversized_trace_refuses_the_kernel_not_crash_the_grade(fake_grader, monkeypatch):
    g = traced_grader(fake_grader, monkeypatch, [(DATA / "rmsnorm_fast.trace").read_text()])
    # Stand-in for a candidate that launches enough (long-named) kernels in its warm-up to pass 512 MiB: the real
    # cap is lowered instead of writing 512 MiB here. RLIMIT_FSIZE in the sandbox is 2 GiB, so such a trace is written.
    monkeypatch.setattr("kernelgym.grader.observing.MAX_TRACE_BYTES", 1000)
    grade = g.grade(g.task.root, seed=1)  # raises UntrustedFileError on 09365d8
    assert not grade.correct and grade.checks["observer"].startswith("failed")


# -- 2. the tracer -> ncu fallback (baseline_observation, observer_tool 'auto') after a session was started traced ----
@pytest.mark.xfail(strict=True, reason="finding 2: a fresh run after the tool flipped is untraced, while the session "
                                       "still reads its trace: an honest kernel is refused")
def test_review_tool_flip_after_a_traced_session_does_not_refuse_an_honest_kernel(fake_grader, monkeypatch):
    g = fake_grader([(0.05, 0.05)] * 5)
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
    grade = g.grade(g.task.root, seed=1)
    assert g.session.traced and seen["traced"] is False and "CUDA_INJECTION64_PATH" not in seen["env"]
    assert grade.correct, grade.checks["observer"]  # 09365d8: 'failed: the kernel tracer wrote no trace'


@pytest.mark.xfail(strict=True, reason="finding 2b: kernelgym_trace_enable's result is ignored; an empty but complete "
                                       "trace is blamed on the kernel ('launched the marker kernel itself')")
def test_review_a_trace_that_never_started_recording_is_not_the_kernels_fault(fake_grader, monkeypatch):
    # What a traced process leaves where cuptiActivityEnable failed at the first marker (deferred mode): the header,
    # no record, and the end line the harness's flush writes.
    g = traced_grader(fake_grader, monkeypatch, ["kernelgym-trace 1 5\nend 0 0\n"])
    grade = g.grade(g.task.root, seed=1)
    assert "candidate launched the marker kernel itself" not in grade.checks["observer"]
    assert grade.outcome == "infra_fault" or "could not start" in grade.checks["observer"], grade.checks["observer"]


# -- 3. a sticky CUDA error in a checked call: the marker after it raises out of check(), no result is written --------
def _request(tmp_path, traced):
    return Request(mode="grade", language="triton", directory=str(tmp_path), entry_point="kernel.py:f",
                   input_builder="inputs.py:build", builder_directory=str(tmp_path), configs=[{}, {}], seed=1,
                   device="cpu", outputs=[harness.protocol.OutputSlot("y", None)], traced=traced,
                   observer_tool="tracer" if traced else "ncu", require_own_launch=False)


@pytest.mark.parametrize("traced", [False, pytest.param(True, marks=pytest.mark.xfail(
    strict=True, raises=RuntimeError, reason="finding 3: _marker() outside the per-config try"))])
def test_review_a_sticky_cuda_error_still_gives_per_config_errors(tmp_path, monkeypatch, traced):
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
@pytest.mark.xfail(strict=True, reason="finding 4 (pre-existing): Observing._baseline_key ignores a change of configs")
def test_review_the_baseline_key_follows_the_configs(tmp_path, monkeypatch):
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
@pytest.mark.xfail(strict=True, reason="finding 6 (nit): defences that act only on a run apart reported in force")
def test_review_run_apart_defences_are_off_when_traced(fake_grader, monkeypatch):
    g = traced_grader(fake_grader, monkeypatch, [(DATA / "rmsnorm_fast.trace").read_text()])
    grade = g.grade(g.task.root, seed=1)
    states = {k: v for k, v in grade.checks.get("defences", grade.checks).items()
              if k in ("observed_run_reads_sources_first", "early_observer_death_is_infra", "kernel_artifacts_only",
                       "observed_cache_copy_bounded")}
    assert states and all(str(v).startswith("off") for v in states.values()), states
