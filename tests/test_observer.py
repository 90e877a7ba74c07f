"""The outside observer (kernelgym/grader/observer.py): reading Nsight Compute's reports (real ones, recorded on the
H200 on 2026-12-01, in tests/data/ncu/), cutting them at the markers, telling the candidate's kernels from library
ones, the speedup cross-check, and what the grader makes of each (on a faked observed run: no GPU in CI)."""
from pathlib import Path

import pytest

from kernelgym.backends import cuda, triton
from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.grader.observer import (Kernel, ObserverError, base_name, cross_check, foreign_kernels, is_allowed,
                                       is_own, parse_report, split)

DATA = Path(__file__).resolve().parent / "data" / "ncu"
N = 5  # configs of the rmsnorm, fused-add-rmsnorm and cuda-gelu tasks in those reports


def report(name):
    return parse_report((DATA / name).read_text())


def test_real_reports_parse_in_launch_order_and_cut_at_the_markers():
    kernels = report("rmsnorm_baseline.csv")
    assert len(kernels) == N + 2 + 2 * N + 1  # markers, one rmsnorm_kernel per warm-up and checked call, a fill
    obs = split(kernels, N)
    assert [[k.name for k in c] for c in obs.checked] == [["rmsnorm_kernel"]] * N
    assert [k.name for k in obs.before] == ["rmsnorm_kernel"] * N and obs.after == []
    assert all(0.001 < obs.checked_ms(i) < 1.0 for i in range(N))  # ns in the report, ms here
    assert obs.checked_ms(4) > obs.checked_ms(0)  # the largest config takes longest


def test_the_baselines_own_kernels_are_their_own():
    rms = get_task("triton-rmsnorm")
    own = triton.own_kernel_names({"kernel.py": (rms.root / "kernel.py").read_text()})
    assert own == {"rmsnorm_kernel"}
    assert foreign_kernels(split(report("rmsnorm_baseline.csv"), N), own) == [[]] * N
    gelu = get_task("cuda-gelu")
    own = cuda.own_kernel_names({p.name: p.read_text() for p in gelu.root.glob("*.c*")})
    assert own == {"gelu_kernel"}
    assert foreign_kernels(split(report("cuda_gelu.csv"), N), own) == [[]] * N
    assert all(f for f in foreign_kernels(split(report("cuda_gelu.csv"), N), set()))  # someone else's gelu_kernel


def test_pytorch_beside_a_token_kernel_is_seen_on_every_config(recorded):
    foreign = foreign_kernels(recorded("rmsnorm_torch_beside_token.v1-layout.csv"), {"token_kernel"})
    for names in foreign:
        assert any("pow_tensor_scalar" in n for n in names) and any("reduce_kernel" in n for n in names)
        assert not any("token_kernel" in n or "FillFunctor" in n for n in names)  # its own, and torch.zeros: allowed


@pytest.mark.parametrize("name, own, expected", [
    ("rmsnorm_kernel", {"rmsnorm_kernel"}, True),
    ("void gelu_kernel<__nv_bfloat16>(const T1 *, T1 *, long)", {"gelu_kernel"}, True),
    ("void mine::gelu_kernel<float>(const float *)", {"gelu_kernel"}, False),  # in a namespace: not recognized
    ("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64", {"sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64"}, False),
    ("nvjet_tst_128x64_64x8_2x1_v_bz_TNN", {"nvjet_tst_128x64_64x8_2x1_v_bz_TNN"}, False),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)", {"vectorized_elementwise_kernel"}, False),
])
def test_own_means_named_in_the_sources_at_file_scope_and_not_like_a_library(name, own, expected):
    assert is_own(name, own) is expected


@pytest.mark.parametrize("name, expected", [
    ("rmsnorm_kernel", True),
    ("void gemv2T_kernel_val<int, int, float, float, 128, 16, 4, 4, false, false>(float *)", False),  # cuBLAS
    ("void softmax_warp_forward<float, float, float, 10, false, false>(float *, const float *, int)", False),
])
def test_triton_kernels_are_own_only_by_their_bare_name(name, expected):
    own = {"rmsnorm_kernel", "gemv2T_kernel_val", "softmax_warp_forward"}  # names a candidate defined, never launched
    assert is_own(name, own, bare=True) is expected


def test_allow_list_is_pytorchs_fill_and_copy_only():
    assert is_allowed("void native::vectorized_elementwise_kernel<4, native::FillFunctor<float>, std::array<char *, 1>>(int, T2, T3)")
    assert is_allowed("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::{lambda()#3}>(int)")
    assert not is_allowed("void native::vectorized_elementwise_kernel<4, native::AUnaryFunctor<float, float, float, binary_internal::MulFunctor<float>>>(int)")
    assert not is_allowed("void mine::FillFunctor_lookalike(float *)")  # the name must be PyTorch's
    assert base_name("at::<unnamed>::spin_kernel(long)") == ("at::unnamed", "spin_kernel")


def test_a_forged_marker_or_an_unfinished_run_is_refused():
    kernels = report("rmsnorm_baseline.csv")
    extra = kernels[:6] + [Kernel("at::<unnamed>::spin_kernel(long)", 1e3)] + kernels[6:]
    with pytest.raises(ObserverError, match="8 marker kernels where 7"):
        split(extra, N)
    with pytest.raises(ObserverError, match="marker kernels"):
        split(kernels[:-3], N)  # the profiler stopped before the run ended
    with pytest.raises(ObserverError, match="no report"):
        parse_report("==PROF== Connected to process 26\n")
    text = (DATA / "rmsnorm_baseline.csv").read_text()
    text = text.replace('","ns","', '","ns","fast', 1)
    with pytest.raises(ObserverError, match="unreadable"):
        parse_report(text)


@pytest.mark.parametrize("speedup, base_ms, cand_ms, refused", [
    (1.50, 0.0437, 0.0441, True),   # forged on the H200: the profiler saw 0.99x
    (1.41, 0.1902, 0.1275, False),  # fused-add-rmsnorm, honest: 1.49x observed
    (1.60, 0.0054, 0.0029, False),  # small config: measured below the observed 1.86x
    (1.01, 0.0027, 0.0030, False),  # within the noise of 1: not checked
    (1.30, 0.0100, 0.0, True),      # no device time seen at all
    (1.30, 0.0100, float("nan"), True),  # a NaN in the report must not pass
])
def test_cross_check(speedup, base_ms, cand_ms, refused):
    assert (cross_check(speedup, base_ms, cand_ms, margin=0.25) is not None) is refused


@pytest.mark.parametrize("text, why", [
    ('"0","26","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","s","gpu__time_duration.sum","ns","nan"', "out of place"),
    ('"0","26","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","s","gpu__time_duration.sum","ns","-5"', "out of place"),
    ('"1","26","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","s","gpu__time_duration.sum","ns","5"', "launches 0"),
])
def test_report_rows_out_of_place_are_refused(text, why):
    header = (DATA / "rmsnorm_baseline.csv").read_text().splitlines()
    header = [line for line in header if line.startswith('"ID"')][0]
    with pytest.raises(ObserverError, match=why):
        parse_report(header + "\n" + text + "\n")


def test_a_second_process_or_a_repeated_id_in_the_report_is_refused():
    text = (DATA / "rmsnorm_baseline.csv").read_text()
    last = [line for line in text.splitlines() if line.startswith('"')][-1]
    with pytest.raises(ObserverError):
        parse_report(text + last + "\n")  # the same ID twice
    with pytest.raises(ObserverError, match="2 processes"):
        parse_report(text + last.replace('"26"', '"27"', 1).replace(last.split('","')[0] + '"', '"999"', 1) + "\n")


# -- what the grader makes of it -------------------------------------------------------------------------------------
OWN = ("rmsnorm_kernel", 4000.0)


def test_honest_kernel_observed_scores_as_before(observed_grader, observation):
    same = observation([[OWN]] * N)
    g = observed_grader([(0.05, 0.05)] * N, same, same)
    grade = g.grade(g.task.root, seed=1)
    assert grade.correct and grade.score > 215
    assert grade.checks["observer"] == "passed" and grade.checks["static_check"] == "passed"
    assert grade.checks["speedup_cross_check"] in ("passed", "not run: no speedup measured")
    assert "only the candidate's own kernels (rmsnorm_kernel)" in "\n".join(grade.stages[1].messages)


def test_honest_speedup_supported_by_the_profiler_stands(observed_grader, observation):
    g = observed_grader([(0.1, 0.05)] * N, observation([[("rmsnorm_kernel", 2000.0)]] * N), observation([[OWN]] * N))
    grade = g.grade(g.task.root, seed=1)
    assert grade.checks["speedup_cross_check"] == "passed" and grade.score > 300


def test_a_withheld_speedup_without_turns_names_the_schedule(observed_grader, observation):
    # 2x timed, but the profiler saw the same device times: withheld. Without the GPU's schedule, other envs' work
    # beside the traced calls is one honest cause, and the grade names the setting that gives them a turn.
    import dataclasses

    from kernelgym.grader.observing import CONTENTION_HINT
    for schedule in (False, True):
        g = observed_grader([(0.1, 0.05)] * N, observation([[OWN]] * N), observation([[OWN]] * N))
        g.config = dataclasses.replace(g.config, gpu_schedule=schedule)
        grade = g.grade(g.task.root, seed=1)
        assert grade.checks["speedup_cross_check"] == "failed" and 115 < grade.score < 125
        assert (CONTENTION_HINT in grade.stages[2].messages) is not schedule


def test_a_machine_that_cannot_observe_even_the_baseline_grades_as_before_and_says_so(observed_grader):
    broken = ObserverError("ncu: no permission")
    g = observed_grader([(0.05, 0.05)] * N, broken, broken)
    grade = g.grade(g.task.root, seed=1)
    assert grade.correct and grade.score > 215 and grade.checks["observer"] == "unavailable: ncu: no permission"


def test_baseline_unobservable_leaves_the_speedup_unchecked_and_says_so(observed_grader, observation):
    g = observed_grader([(0.1, 0.05)] * N, observation([[OWN]] * N), ObserverError("ncu: no permission"))
    grade = g.grade(g.task.root, seed=1)
    assert grade.checks["observer"] == "passed" and grade.score > 300
    assert grade.checks["speedup_cross_check"].startswith("unavailable")


def test_not_sampled_and_unavailable_gradings_say_which_checks_ran(fake_grader):
    g = fake_grader([(0.05, 0.05)] * N)  # no GPU here: the observer is unavailable
    grade = g.grade(g.task.root, seed=1)
    assert grade.correct and grade.checks["observer"].startswith("no GPU device nodes")
    assert grade.checks["speedup_cross_check"] == "not run: no observer"
    assert "no outside observer" in "\n".join(grade.stages[1].messages)


def test_sampling_draws_per_grading(observed_grader, observation):
    same = observation([[OWN]] * N)
    g = observed_grader([(0.05, 0.05)] * N, same, same)
    g.config.observe_fraction = 0.0
    assert g.grade(g.task.root, seed=1).checks["observer"] == "not sampled (observe_fraction=0)"


def test_required_observer_that_cannot_run_fails_the_grading(fake_grader):
    g = fake_grader([(0.05, 0.05)] * N)
    g.config.observer = "required"
    grade = g.grade(g.task.root, seed=1)
    assert not grade.correct and grade.score == 20.0 and grade.checks["observer"].startswith("failed: required")


def test_cpu_interpreter_says_no_observer_runs():
    from kernelgym.grader import Grader
    from kernelgym.hardware import all_profiles
    cpu = next(p for p in all_profiles().values() if p.interpreter)
    g = Grader(get_task("triton-rmsnorm"), cpu, Path("/tmp") / "kg-observer-test")
    assert "CPU interpreter" in g.observer_unavailable() and "no outside observer" in g.provenance_note()


def test_observed_run_starts_ahead_only_after_the_baseline_and_is_killed_when_given_up(fake_grader, observation,
                                                                                       monkeypatch):
    """Two profilers at once conflict (the second one's process died on the H200): the run started ahead waits for the
    baseline's observation; a grading given up meanwhile (stop_observer) starts none, and one given up while its run
    starts has that run killed."""
    import subprocess
    import sys
    from types import SimpleNamespace

    from kernelgym.grader.grader import _ObservedRun
    g = fake_grader([(0.05, 0.05)] * N)
    order = []
    monkeypatch.setattr(g, "baseline_observation", lambda: order.append("baseline"))

    started, give_up_while_starting = [], []

    def start(gdir, seed):
        order.append("ahead")
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
        started.append(proc)
        if give_up_while_starting:
            g._ahead_token = object()
        return _ObservedRun(proc, gdir, gdir, gdir, [])
    monkeypatch.setattr(g, "_start_observed_run", start)
    session = SimpleNamespace(gdir=g.work_dir, seed=1, traced=False)
    g._ahead_token = token = object()
    g._prepare_observer(session, True, token)
    assert order == ["baseline", "ahead"] and g._observing is not None
    kept = g._observing.proc
    g.stop_observer()
    assert kept.wait(timeout=10) is not None and g._observing is None
    # Given up before the baseline's observation ended (a reset that discards a grading prepared ahead): no run is
    # started for it, so no two observed runs profile at once.
    g._ahead_token = object()
    g._prepare_observer(session, True, token)
    assert g._observing is None and order == ["baseline", "ahead", "baseline"]
    g._ahead_token = token
    give_up_while_starting.append(True)  # given up while its run starts: the run is killed, not kept
    g._prepare_observer(session, True, token)
    assert g._observing is None and order[-2:] == ["baseline", "ahead"] and started[-1].wait(timeout=10) is not None
    g._prepare_observer(session, False, g._ahead_token)  # not sampled: the baseline only
    assert order[-1] == "baseline"


def test_observed_warm_up_calls_get_inputs_of_other_values():
    """Work done in a warm-up call must not serve the checked call (a cache keyed by values; review, 2026-12-01)."""
    import importlib.util

    import torch

    from kernelgym.grader.grader import Grader
    from kernelgym.hardware import all_profiles
    spec = importlib.util.spec_from_file_location("kg_harness_test", Path(__file__).resolve().parents[1] / "kernelgym" / "grader" / "harness.py")
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    cpu = next(p for p in all_profiles().values() if p.interpreter)
    g = Grader(get_task("triton-rmsnorm"), cpu, Path("/tmp") / "kg-observer-warmup")
    import dataclasses
    req = dataclasses.replace(g._request(g.baseline_dir, 3, timed=False), mode="check", observe=True)
    state = harness.prepare(req)
    assert len(state.warmup_inputs) == len(state.check_inputs) == len(g.configs)
    for warm, checked in zip(state.warmup_inputs, state.check_inputs):
        assert warm[0].shape == checked[0].shape and not torch.equal(warm[0], checked[0])


def test_grading_waits_for_the_observer_to_be_idle(fake_grader, monkeypatch):
    """Profiling (the baseline's observation, the run started ahead while it prepares) must not overlap the timed runs:
    grade() waits for the background work and for the run ahead to say it prepared; one that never does is given up."""
    import subprocess
    import sys
    import threading
    import time as _time

    from kernelgym.grader.grader import _ObservedRun
    from kernelgym.grader.protocol import PREPARED_MARKER
    g = fake_grader([(0.05, 0.05)] * N)
    done = []
    g._observer_thread = threading.Thread(target=lambda: (_time.sleep(0.3), done.append(1)))
    g._observer_thread.start()
    output = ["[harness] prepare 0.1 s\n"]
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    g._observing = _ObservedRun(proc, g.work_dir, g.work_dir, g.work_dir, output)
    threading.Timer(0.5, lambda: output.append(PREPARED_MARKER + "\n")).start()
    start = _time.monotonic()
    g._wait_for_observer()
    assert done and _time.monotonic() - start >= 0.45 and g._observing is not None  # waited, kept the ready run
    g._observing.output.clear()
    g._wait_for_observer(timeout_s=0.2)  # never says it prepared: given up
    assert g._observing is None and proc.wait(timeout=10) is not None


def test_an_observed_run_that_says_it_finished_is_not_waited_for(tmp_path):
    """Under the tracer the grader ends an observed run once it prints that it finished (its trace is flushed by
    then), not after CUDA's teardown; under ncu, which writes its report at exit, it waits for the exit."""
    import collections
    import subprocess
    import sys
    import time as time_module

    from kernelgym.grader.grader import _ObservedRun
    from kernelgym.grader.protocol import OBSERVED_FINISHED_MARKER
    from kernelgym.hardware import all_profiles
    g = Grader(get_task("triton-rmsnorm"), all_profiles()["h200"], tmp_path / "g", GraderConfig(sandbox="none"))
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        run = _ObservedRun(proc, tmp_path, tmp_path, tmp_path, collections.deque([OBSERVED_FINISHED_MARKER + "\n"]))
        g._tool = "tracer"
        t = time_module.monotonic()
        assert g._wait_observed(run) is True and time_module.monotonic() - t < 5
        g._tool, g.config.timeout_s = "ncu", 0.3
        with pytest.raises(subprocess.TimeoutExpired):
            g._wait_observed(run)
    finally:
        proc.kill()


def test_under_the_tracer_the_grading_waits_for_the_baseline_but_not_for_the_run_ahead_to_prepare(fake_grader):
    """The tracer's run ahead prepares beside the candidate's timed runs (as other envs' runs do on a shared GPU); the
    baseline's observation, whose device times every later cross-check reads, never overlaps them."""
    import subprocess
    import sys
    import threading
    import time as _time

    from kernelgym.grader.grader import _ObservedRun
    g = fake_grader([(0.05, 0.05)] * N)
    g._tool = "tracer"
    done = []
    g._observer_thread = threading.Thread(target=lambda: (_time.sleep(0.3), done.append(1)))
    g._observer_thread.start()
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        g._observing = _ObservedRun(proc, g.work_dir, g.work_dir, g.work_dir, ["[harness] prepare 0.1 s\n"])
        start = _time.monotonic()
        g._wait_for_observer(timeout_s=5.0)
        assert done and _time.monotonic() - start < 2.0  # the baseline waited for, the unprepared run not
        assert g._observing is not None and proc.poll() is None  # kept: it goes once the candidate's process ends
    finally:
        proc.kill()


def _observed_ahead(g, monkeypatch, observation, block_s=0.0):
    """Make `g`'s sessions look observed ahead, and its observed run a fake that takes a sleeping process as the run
    ahead (so a cancel can kill it) and records when it ran. Returns the list of events."""
    import subprocess
    import sys
    import time as _time

    from kernelgym.grader import gates
    from kernelgym.grader import grader as grader_module
    from kernelgym.grader.grader import _ObservedRun
    from kernelgym.grader.protocol import OUTPUTS
    events = []
    session_for = g._session_for
    g._tool = "tracer"  # the grading does not wait for the (fake) run ahead to prepare

    def session_with_run_ahead(seed):
        session = session_for(seed)
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
        g._observing = _ObservedRun(proc, session.gdir, session.gdir, session.gdir, [])
        events.append(("ahead", proc))
        return session

    def observed_run(session, sources, started=None):
        ahead, g._observing = g._observing, None
        events.append(("observed run starts", _time.monotonic()))
        if block_s and started is not None:  # a long run, until cancelled; then the thread kills it (as the real one)
            started.cancelled.wait(block_s)
            ahead.proc.kill()
            raise ObserverError("the observed run was killed")
        g._observed_outputs = session.gdir / OUTPUTS
        return observation

    def correctness(*args, **kwargs):
        events.append(("compare starts", _time.monotonic()))
        _time.sleep(0.2)
        result = gates.correctness_gate(*args, **kwargs)
        events.append(("compare ends", _time.monotonic()))
        return result

    monkeypatch.setattr(g, "_session_for", session_with_run_ahead)
    monkeypatch.setattr(g, "_observed_run", observed_run)
    monkeypatch.setattr(grader_module, "correctness_gate", correctness)
    return events


def test_the_observed_run_goes_while_the_outputs_are_compared(observed_grader, observation, monkeypatch):
    """The candidate's process has ended: its observed run goes at once, beside the parent's comparisons, and the
    verdict is the one it gave after them."""
    same = observation([[OWN]] * N)
    g = observed_grader([(0.05, 0.05)] * N, same, same)
    events = _observed_ahead(g, monkeypatch, same)
    grade = g.grade(g.task.root, seed=1)
    times = dict((name, t) for name, t in events if name != "ahead")
    assert times["observed run starts"] < times["compare ends"]
    assert grade.correct and grade.checks["observer"] == "passed" and grade.score > 215
    foreign = observation([[OWN, ("sm90_xmma_gemm_f16f16", 900.0)]] * N)  # a library kernel seen: refused as before
    g = observed_grader([(0.05, 0.05)] * N, same, same)
    _observed_ahead(g, monkeypatch, foreign)
    grade = g.grade(g.task.root, seed=1)
    assert not grade.correct and grade.checks["observer"] == "failed" and grade.score == 20.0


def test_an_observed_run_started_for_a_kernel_that_fails_correctness_is_killed(observed_grader, observation,
                                                                                monkeypatch):
    """A wrong kernel is not observed: the run that went beside the comparisons is killed, not waited for."""
    import time as _time
    same = observation([[OWN]] * N)
    g = observed_grader([(0.05, 0.05)] * N, same, same, wrong_checked=(0,))
    events = _observed_ahead(g, monkeypatch, same, block_s=60.0)
    start = _time.monotonic()
    grade = g.grade(g.task.root, seed=1)
    assert _time.monotonic() - start < 30.0  # not the 60 s the run would take
    assert not grade.correct and grade.checks["observer"] == "not run: an earlier gate failed"
    proc = next(p for name, p in events if name == "ahead")
    assert proc.wait(timeout=10) is not None  # killed


# -- the run ahead as a real process (tests/fakes/observed_runs.py) --------------------------------------------------
from fakes.observed_runs import fake_fresh_runs, sleeper, with_run_ahead  # noqa: E402

def test_a_run_ahead_that_dies_while_preparing_is_the_machines_fault_not_the_kernels(fake_grader, observation,
                                                                                      monkeypatch):
    """It had not prepared when the candidate's process ended (under the tracer nothing waited for it) and died
    (CUDA out of memory beside other envs): no candidate code ran in it, so a fresh run observes the kernel."""
    same = observation([[OWN]] * N)
    g = fake_grader([(0.05, 0.05)] * N)
    with_run_ahead(g, monkeypatch, lambda: sleeper(1.5, code=1, prepared=False), prepared_output=False)
    fresh = fake_fresh_runs(g, monkeypatch, 0.0, same)
    grade = g.grade(g.task.root, seed=1)
    assert grade.correct and grade.checks["observer"] == "passed" and len(fresh) == 1
    assert g.session.observer_ahead.startswith("exited with code 1 before go")


def test_a_wrong_kernel_is_not_observed_where_the_run_ahead_died(fake_grader, observation, monkeypatch):
    """The thread never runs a fresh observation (which nothing could cancel): a wrong kernel is not observed."""
    import time as _time
    same = observation([[OWN]] * N)
    g = fake_grader([(0.05, 0.05)] * N, wrong_checked=(0,))

    def dead():
        proc = sleeper(0.0, code=1)
        proc.wait()
        return proc
    with_run_ahead(g, monkeypatch, dead)
    fresh = fake_fresh_runs(g, monkeypatch, 8.0, same)
    start = _time.monotonic()
    grade = g.grade(g.task.root, seed=1)
    assert not grade.correct and not fresh and _time.monotonic() - start < 6.0


def test_an_error_in_the_comparisons_leaves_no_observed_run_behind(fake_grader, observation, monkeypatch):
    """A TaskSpecError out of the comparisons (the task's reference failed) after the observed run went: the run is
    killed and its thread ended before the error leaves grade()."""
    import threading
    import time as _time

    from kernelgym.errors import TaskSpecError
    from kernelgym.grader import grader as grader_module
    same = observation([[OWN]] * N)
    g = fake_grader([(0.05, 0.05)] * N)
    procs = with_run_ahead(g, monkeypatch, lambda: sleeper(60))
    fake_fresh_runs(g, monkeypatch, 0.0, same)

    def broken(*args, **kwargs):
        _time.sleep(0.3)
        raise TaskSpecError("the task's reference failed")
    monkeypatch.setattr(grader_module, "correctness_gate", broken)
    try:
        with pytest.raises(TaskSpecError):
            g.grade(g.task.root, seed=1)
        assert procs[0].wait(timeout=10) is not None
        assert not [t for t in threading.enumerate() if t.name == "observed-run"]
    finally:
        procs[0].kill()


# -- the second review of the overlap (2026-12-07): each failed on bbd3d17 -------------------------------------------
import dataclasses as _dataclasses  # noqa: E402
import errno  # noqa: E402
import time  # noqa: E402

from kernelgym.errors import TaskSpecError  # noqa: E402
from kernelgym.grader import grader as grader_module  # noqa: E402
from kernelgym.grader import observing  # noqa: E402


def _leftover(g):
    return sorted(p.name for p in g.work_dir.iterdir() if p.name.startswith("observed-"))


def test_a_dead_run_aheads_directories_are_removed(fake_grader, observation, monkeypatch):
    """The run ahead died while preparing; a fresh run observed. Both runs' directories should be gone."""
    same = observation([[OWN]] * N)
    g = fake_grader([(0.05, 0.05)] * N)
    with_run_ahead(g, monkeypatch, lambda: sleeper(0.3, code=1, prepared=False), prepared_output=False)
    fake_fresh_runs(g, monkeypatch, 0.0, same)
    grade = g.grade(g.task.root, seed=1)
    assert grade.correct and g.session.observer_ahead.startswith("exited with code 1")
    assert _leftover(g) == [], f"left behind: {_leftover(g)}"


def test_an_error_in_the_comparisons_with_no_observation_started_leaves_no_run_ahead(fake_grader, observation,
                                                                                         monkeypatch):
    """start_observation declined (the disk check failed), the comparisons raise TaskSpecError: grade() skips
    stop_observer, so the run ahead (holding the GPU) stays alive."""
    same = observation([[OWN]] * N)
    g = fake_grader([(0.05, 0.05)] * N)
    g.config = _dataclasses.replace(g.config, grading_dir_cap_files=2)
    procs = with_run_ahead(g, monkeypatch, lambda: sleeper(60))
    fake_fresh_runs(g, monkeypatch, 0.0, same)

    def broken(*args, **kwargs):
        raise TaskSpecError("the task's reference failed")
    monkeypatch.setattr(grader_module, "correctness_gate", broken)
    try:
        with pytest.raises(TaskSpecError):
            g.grade(g.task.root, seed=1)
        time.sleep(0.2)
        assert procs[0].poll() is not None, "the run ahead is still running after grade() raised"
    finally:
        procs[0].kill()


@pytest.mark.parametrize("wrong", [False, True])
def test_a_crash_in_the_thread_before_go_leaves_no_run_ahead(fake_grader, observation, monkeypatch, wrong):
    """The thread took the run ahead out of _observing, then the copy for it raised (ENOSPC). Only the thread kills
    its run, and it never does here: the process is left running (a spawned one has a 24 h limit)."""
    same = observation([[OWN]] * N)
    g = fake_grader([(0.05, 0.05)] * N, wrong_checked=(0,) if wrong else ())
    procs = with_run_ahead(g, monkeypatch, lambda: sleeper(60))
    fake_fresh_runs(g, monkeypatch, 0.0, same)

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(observing, "write_new", full)  # the sources written for the observed run
    try:
        try:
            g.grade(g.task.root, seed=1)
        except OSError:
            pass  # correct kernel: the crash is re-raised by result()
        time.sleep(0.2)
        assert procs[0].poll() is not None, "the run ahead is still running after grade() returned/raised"
    finally:
        procs[0].kill()


def test_a_run_cancelled_before_go_is_not_reported_as_used(fake_grader, observation, monkeypatch):
    """A wrong kernel: the cancel comes while the thread copies files, before go. observer_ahead should not say
    'used: go to ...'."""
    same = observation([[OWN]] * N)
    g = fake_grader([(0.05, 0.05)] * N, wrong_checked=(0,))
    procs = with_run_ahead(g, monkeypatch, lambda: sleeper(60))
    fake_fresh_runs(g, monkeypatch, 0.0, same)
    copy = observing.copy_regular_files

    def slow(*a, **k):
        time.sleep(1.0)
        return copy(*a, **k)
    monkeypatch.setattr(observing, "copy_regular_files", slow)
    try:
        g.grade(g.task.root, seed=1)
        assert not g.session.observer_ahead.startswith("used"), g.session.observer_ahead
    finally:
        procs[0].kill()


def test_an_unused_run_aheads_directories_are_removed(fake_grader, observation, monkeypatch):
    """(pre-existing) A run ahead killed by stop_observer (start_observation declined: the disk check failed, a
    finding, a failed compile): its observed-src-*/observed-* directories are never removed."""
    same = observation([[OWN]] * N)
    g = fake_grader([(0.05, 0.05)] * N)
    g.config = _dataclasses.replace(g.config, grading_dir_cap_files=2)
    procs = with_run_ahead(g, monkeypatch, lambda: sleeper(60))
    fake_fresh_runs(g, monkeypatch, 0.0, same)
    try:
        grade = g.grade(g.task.root, seed=1)
        assert not grade.correct
        assert _leftover(g) == [], f"left behind: {_leftover(g)}"
    finally:
        procs[0].kill()


def test_a_run_ahead_that_died_after_preparing_does_not_refuse_an_honest_kernel(fake_grader, observation,
                                                                                  monkeypatch):
    """The run ahead printed PREPARED, then died before go (host OOM killer, a GPU fault, its PRELOAD import):
    no candidate code ran in it. _prepared() sees the marker and returns True without polling, so 'go' is written
    to a dead process and the honest kernel is refused. Before bbd3d17 the poll() check sent it to a fresh run."""
    same = observation([[OWN]] * N)
    g = fake_grader([(0.05, 0.05)] * N)

    def dead_after_prepared():
        proc = sleeper(0.0, code=1, prepared=True)
        proc.wait()
        return proc
    with_run_ahead(g, monkeypatch, dead_after_prepared)
    fresh = fake_fresh_runs(g, monkeypatch, 0.0, same)
    grade = g.grade(g.task.root, seed=1)
    assert grade.correct and grade.checks["observer"] == "passed" and len(fresh) == 1, (
        grade.score, grade.checks["observer"], g.session.observer_ahead, len(fresh))



def test_the_check_inputs_are_let_go_before_the_timed_runs(tmp_path, monkeypatch):
    """The timed runs read only their own pools: the checked calls' input sets are released before them, so N envs on
    one card do not each hold them through timing."""
    import dataclasses
    import importlib.util

    from kernelgym.grader.grader import Grader
    from kernelgym.hardware import all_profiles
    spec = importlib.util.spec_from_file_location("kg_harness_free", Path(__file__).resolve().parents[1] / "kernelgym" / "grader" / "harness.py")
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    cpu = next(p for p in all_profiles().values() if p.interpreter)
    g = Grader(get_task("triton-rmsnorm"), cpu, tmp_path / "work")
    req = dataclasses.replace(g._request(g.baseline_dir, 3, timed=False), mode="grade",
                              results_directory=str(tmp_path))
    state = harness.prepare(req)
    assert len(state.check_inputs) == len(g.configs)
    seen = []
    # The checked calls themselves are not the point here (the interpreter runs them in test_grader).
    monkeypatch.setattr(harness, "check", lambda req, fn, inputs, backend, warm: {
        "stage": "check", "ok": True, "configs": [{"ok": True} for _ in inputs]})
    monkeypatch.setattr(harness, "run_timing", lambda req, state, fn: seen.append(
        (state.check_inputs, state.warmup_inputs)) or {"configs": []})
    state.timing = []  # as a GPU grading's prepared baseline would be (the interpreter times nothing)
    harness.finish(req, state)
    assert seen == [((), ())]
