"""Fixtures shared by the suite and the attack files (tests/attacks/): a workspace and a grading of the rmsnorm task
on the CPU interpreter, an env, a sandbox, a grader whose harness results are fabricated (`fake_grader`), and two
stand-ins for the GPU: a simulated device for the timing loop (`sim_device`) and fake CUDA streams, graphs and
events for `harness.Timed` (`fake_cuda`)."""
import contextlib
import dataclasses
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

TASK_NAME = "triton-rmsnorm"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELGYM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KERNELGYM_PRIVATE_DIR", str(tmp_path / "private"))


@pytest.fixture
def require_bwrap():
    # Not a skip: the suite's sandbox claims must be shown, so a missing bwrap fails loudly.
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is required for the test suite: apt-get install bubblewrap (.ci/run does this)")


@pytest.fixture(scope="module")
def long_episode_env(tmp_path_factory):
    """One triton-rmsnorm env for a whole test module, reset once, with steps enough for every test's actions
    (100,000) and 10 s per command."""
    import gymnasium as gym

    import kernelgym  # noqa: F401 - registers the envs
    if shutil.which("bwrap") is None:  # not a skip: the suite's sandbox claims must be shown
        pytest.fail("bubblewrap is required for the test suite: apt-get install bubblewrap (.ci/run does this)")
    e = gym.make("KernelArena/triton-rmsnorm-v0", run_dir=tmp_path_factory.mktemp("episode"), max_steps=100_000,
                 command_timeout_s=10).unwrapped
    e.reset(seed=0)
    yield e
    e.close()


# -- the rmsnorm task on the CPU interpreter ----------------------------------------------------------------------
@pytest.fixture
def make_workspace(tmp_path):
    """make_workspace(source=None, name="ws") -> a workspace under tmp_path with the task's public files, and
    `source` as kernel.py when given."""
    from kernelgym.discovery import get_task
    task = get_task(TASK_NAME)

    def _make(source=None, name="ws"):
        ws = tmp_path / name
        ws.mkdir()
        for rel in task.public_files():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(task.root / rel, ws / rel)
        if source is not None:
            (ws / "kernel.py").write_text(source)
        return ws
    return _make


@pytest.fixture
def grade(tmp_path, require_bwrap):
    """grade(kernel_source, extra_files=None, config=None) -> Grade for a workspace holding that kernel.py (None: the
    task's files as they are), on the CPU interpreter, seed 7."""
    from kernelgym.discovery import get_task
    from kernelgym.grader import Grader, GraderConfig
    from kernelgym.hardware import detect_profile
    task, hw = get_task(TASK_NAME), detect_profile("cpu-interpreter")

    def _grade(source, extra_files=None, config=None):
        ws = tmp_path / "ws"
        shutil.rmtree(ws, ignore_errors=True)
        ws.mkdir()
        for rel in task.public_files():
            shutil.copy(task.root / rel, ws / rel)
        if source is not None:
            (ws / "kernel.py").write_text(source)
        for name, text in (extra_files or {}).items():
            (ws / name).write_text(text)
        return Grader(task, hw, tmp_path / "grading", config or GraderConfig()).grade(ws, seed=7)
    return _grade


@pytest.fixture
def env(tmp_path, require_bwrap):
    """A KernelArenaEnv of the rmsnorm task on the CPU interpreter (20 steps), closed after the test."""
    from kernelgym.env import KernelArenaEnv
    e = KernelArenaEnv(TASK_NAME, run_dir=tmp_path / "run", hardware="cpu-interpreter", max_steps=20)
    yield e
    e.close()


@pytest.fixture
def box(tmp_path, require_bwrap):
    """A bubblewrap sandbox on a workspace laid out as an episode's (run/episodes/ep1/workspace), 30 s per command."""
    from kernelgym.sandbox import BubblewrapSandbox, Limits
    ws = tmp_path / "run" / "episodes" / "ep1" / "workspace"
    ws.mkdir(parents=True)
    return BubblewrapSandbox(ws, limits=Limits(timeout_s=30))


# -- a grader whose harness 'ran' on a GPU ------------------------------------------------------------------------
#: Small configs keep the parent's CPU references cheap; the arithmetic does not depend on size.
FAKE_CONFIGS = [{"rows": 4, "hidden": 128, "dtype": "float16"}, {"rows": 8, "hidden": 256, "dtype": "bfloat16"},
                {"rows": 3, "hidden": 1000, "dtype": "float16"}, {"rows": 16, "hidden": 512, "dtype": "bfloat16"},
                {"rows": 64, "hidden": 1024, "dtype": "float16"}]


def save_whole(obj, path):
    """torch.save, whole or not at all (written aside, then renamed), as the harness writes its outputs."""
    import torch
    torch.save(obj, f"{path}.part")
    os.replace(f"{path}.part", path)


def fake_runs(t):
    """100 candidate runs in 10 rounds of 10 whose per-round speedups are 1% either side of baseline / t."""
    return [t / (0.99 if r % 2 else 1.01) for r in range(10) for _ in range(10)]


@pytest.fixture
def fake_grader(tmp_path, monkeypatch):
    """fake_grader(times, wrong_timed=False, hardware=None, extra=None, wrong_checked=(), work="grading") -> a Grader
    on a GPU profile (default the H200) whose harness 'ran' the baseline kernel and reported `times` (ms pairs, one
    per config of `fake_grader.configs`), with `extra` fields added to every config's timing result. The checked
    outputs of the configs in `wrong_checked` are zeros; with `wrong_timed`, so are the timed path's. `work`: the
    grader's directory under tmp_path. The parent's
    comparisons, statistics and roofline checks are real.

    Attributes: ``configs``, ``h200`` (the profile), ``runs`` (`fake_runs`), ``task``."""
    import torch

    from kernelgym.discovery import get_task
    from kernelgym.grader import Grader
    from kernelgym.grader.protocol import OUTPUTS, check_seed, output_key, timed_output_name, verify_seed
    from kernelgym.grader.reference import reference_outputs
    from kernelgym.hardware import all_profiles
    task, h200 = get_task(TASK_NAME), all_profiles()["h200"]
    name = task.spec.outputs[0].name

    def make(times, wrong_timed=False, hardware=None, extra=None, wrong_checked=(), work="grading"):
        g = Grader(task, hardware or h200, tmp_path / work, configs=FAKE_CONFIGS)

        def run_harness(gdir, seed):
            outs = {}
            for i, cfg in enumerate(g.configs):
                dtype = getattr(torch, cfg["dtype"])
                (ref,) = reference_outputs(task, cfg, check_seed(seed, i))
                outs[output_key(i, name)] = (ref * (0 if i in wrong_checked else 1)).to(dtype)
                (ref,) = reference_outputs(task, cfg, verify_seed(seed, i))
                save_whole({output_key(i, name): (ref * (0 if wrong_timed else 1)).to(dtype)},
                           gdir / timed_output_name(i))
            save_whole(outs, gdir / OUTPUTS)
            check = {"stage": "check", "ok": True, "error": None,
                     "configs": [{"config": c, "ok": True, "error": None} for c in g.configs]}
            timed = {"stage": "time", "ok": True, "persisting_l2_reset": True, "configs": [
                {"config": c, "ok": True, "baseline_runs_ms": [b] * 100, "candidate_runs_ms": fake_runs(t),
                 "baseline_mode": "cuda-graph", "candidate_mode": "cuda-graph", **(extra or {})}
                for c, (b, t) in zip(g.configs, times)]}
            return check, timed
        monkeypatch.setattr(g, "_run_harness", run_harness)
        return g
    make.configs, make.h200, make.runs, make.task = FAKE_CONFIGS, h200, fake_runs, task
    return make


# -- the timing loop on a simulated device -----------------------------------------------------------------------
class SimEvent:
    """A CUDA event of the simulated device: the clock when it was recorded."""

    def __init__(self, enable_timing=False, external=False):
        self.t = None


class SimDevice:
    """A synchronous stand-in for one CUDA stream: every operation runs when queued, in order. `log` holds what ran
    (refresh, poison, flush, run); `durations` each kernel's run lengths, in run order; `kernels` the kernels by
    graph name (for replay)."""

    #: The input sets of the pool, in order: pool[0] holds the verification inputs.
    POOL = ["verify", "set1", "set2", "set3"]

    def __init__(self):
        self.clock, self.log, self.durations, self.kernels = 0.0, [], {"baseline": [], "candidate": []}, {}

    def run(self, who):
        """One kernel run of `who`, each a distinct length, remembered in run order."""
        d = (1.0 if who == "baseline" else 2.0) + 0.001 * len(self.log)
        self.durations[who].append(d)
        self.log.append(("run", who))
        self.clock += d

    def kernel(self, who, inner, honest_on=tuple(POOL), block=None):
        """A kernel on this device, shaped like `harness.Timed`: its output (one number, `out[0]`) is the index of
        the input set it was given where that set is in `honest_on`; elsewhere it writes nothing (the output keeps
        what was there). `inner`: a graph with events inside (else eager calls). Registered for replay."""
        import torch

        from kernelgym.grader import harness
        block = torch.zeros(1) if block is None else block  # where its output goes (graphs may share one)
        t = SimpleNamespace(who=who, inner=inner, graph=who if inner else None, start=SimEvent(), end=SimEvent(),
                            out=(block,), out_address=id(block), given=None)

        def refresh(values):
            self.log.append(("refresh", values))
            t.given = values
        t.refresh = refresh
        t.poison = lambda: harness._fill(t.out[0], float("nan")) if t.graph is not None else None  # as Timed.poison

        def call():
            if t.graph is not None:
                harness._replay(t.graph)
            else:
                self.run(who)
            if t.given in honest_on:
                block[0] = float(self.POOL.index(t.given))
        t.call = call
        self.kernels[who] = t
        return t

    def expected(self):
        """What every run must output per input set of `POOL`: its index (one output per run)."""
        import torch
        return [(torch.tensor([float(i)]),) for i in range(len(self.POOL))]


@pytest.fixture
def sim_device(monkeypatch):
    """A `SimDevice` that the harness's timing functions (events, replay, synchronize, flush, fill) run on."""
    from kernelgym.grader import harness
    d = SimDevice()

    def replay(graph):  # a graph with events inside: launch (0.5), start, the kernel, end, graph end (0.5)
        t = d.kernels[graph]
        d.clock += 0.5
        t.start.t = d.clock
        d.run(graph)
        t.end.t = d.clock
        d.clock += 0.5

    def record(ev):
        ev.t = d.clock
    monkeypatch.setattr(harness, "_Event", SimEvent)
    monkeypatch.setattr(harness, "_record", record)
    monkeypatch.setattr(harness, "_replay", replay)
    monkeypatch.setattr(harness, "_synchronize", lambda: None)
    monkeypatch.setattr(harness, "_elapsed", lambda s, e: e.t - s.t)
    monkeypatch.setattr(harness, "_sum", lambda flush: d.log.append(("flush",)))
    monkeypatch.setattr(harness, "_fill", lambda out, v: (d.log.append(("poison",)), out.fill_(v)))
    return d


@pytest.fixture
def fake_cuda(monkeypatch):
    """Stand-ins for CUDA streams, graphs and events: enough to construct `harness.Timed` without a GPU. Replaying
    a graph runs nothing. Returns the list of streams each capture began on."""
    from kernelgym.grader import harness
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
    monkeypatch.setattr(harness, "_Event", SimEvent)
    monkeypatch.setattr(harness, "_record", lambda ev: None)
    monkeypatch.setattr(harness, "_replay", lambda graph: None)
    monkeypatch.setattr(harness, "_synchronize", lambda: None)
    monkeypatch.setattr(harness, "_elapsed", lambda s, e: 1.0)
    return captured_on


# -- the outside observer, faked -------------------------------------------------------------------------------------
MARK = "at::<unnamed>::spin_kernel(long)"


@pytest.fixture
def observation():
    """observation(checked, warmup=None, at_import=(), after=()) -> an `observer.Observation` cut from a kernel list as
    the harness launches them: a marker, the import's kernels, every config's warm-up call, a marker, then the checked
    calls one marker apart, and a marker after the last. Kernels are (name, ns) pairs; `warmup` defaults to
    `checked`."""
    from kernelgym.grader.observer import Kernel, split

    def make(checked, warmup=None, at_import=(), after=()):
        ks = [Kernel("void at::native::distribution_elementwise_grid_stride_kernel<float>(int)", 900.0), Kernel(MARK, 1e3)]
        ks += [Kernel(*k) for k in at_import]
        for calls in (warmup or checked):
            ks += [Kernel(*k) for k in calls]
        for calls in checked:
            ks += [Kernel(MARK, 1e3), *(Kernel(*k) for k in calls)]
        ks += [Kernel(MARK, 1e3), *(Kernel(*k) for k in after)]
        return split(ks, len(checked))
    return make


@pytest.fixture
def observed_grader(fake_grader, monkeypatch):
    """observed_grader(times, candidate, baseline, traced=False, **fake_grader_kwargs) -> a `fake_grader` on which the
    outside observer 'ran' (`traced`: in the grading's own checked run): `candidate` (the candidate's observed run) and `baseline` (the baseline's) are Observations, or
    exceptions to raise (an `observer.ObserverError`). The observed outputs are the checked ones. The grader's
    verdicts on what the observer saw are real."""
    from kernelgym.grader.protocol import OUTPUTS

    def make(times, candidate, baseline, traced=False, **kwargs):
        g = fake_grader(times, **kwargs)
        monkeypatch.setattr(g, "observer_unavailable", lambda: None)
        # traced: the grading's own checked run is the observed one (its trace 'read'); else a run of its own.
        g.config = dataclasses.replace(g.config, observe_in_checked_run=traced)
        if traced:
            monkeypatch.setattr(g, "observer_tool", lambda: "tracer")
            monkeypatch.setattr(g, "_tracer_library", Path("/nonexistent/libkernelgym_trace.so"), raising=False)

        def observed_run(session, sources, started=None):
            g.observed_sources = dict(sources)
            if isinstance(candidate, Exception):
                raise candidate
            g._observed_outputs = session.gdir / OUTPUTS
            return candidate

        def baseline_observation():
            if isinstance(baseline, Exception):
                raise baseline
            return baseline
        monkeypatch.setattr(g, "_observed_run", observed_run)
        monkeypatch.setattr(g, "_traced_observation",
                            lambda session: observed_run(session, {}) if session.traced else pytest.fail("not traced"))
        monkeypatch.setattr(g, "baseline_observation", baseline_observation)
        return g
    return make


@pytest.fixture
def recorded():
    """recorded(name, n_configs=5) -> the `observer.Observation` of a report in tests/data/ncu/ (see its README). A
    ``.v1-layout`` report (a marker before each warm-up and each checked call) is regrouped into the current layout:
    the import's and every warm-up call's kernels first, then each checked call's."""
    from kernelgym.grader.observer import MARKER_KERNEL, Observation, parse_report, split

    def load(name, n_configs=5):
        kernels = parse_report((Path(__file__).resolve().parent / "data" / "ncu" / name).read_text())
        if ".v1-layout" not in name:
            return split(kernels, n_configs)
        marks = [i for i, k in enumerate(kernels) if MARKER_KERNEL in k.name]
        assert len(marks) == 2 * n_configs + 2, f"{name}: not a v1-layout report of {n_configs} configs"
        parts = [kernels[a + 1:b] for a, b in zip(marks, marks[1:])]
        before = parts[0] + [k for warmup in parts[1::2] for k in warmup]
        return Observation(before=before, checked=parts[2::2], after=kernels[marks[-1] + 1:])
    return load


@pytest.fixture
def timed_reference_task(tmp_path, require_bwrap):
    """timed_reference_task(file, baseline, candidate, perf_runner, rounds) -> a `ReferenceGrader` on the h200 profile
    and a workspace: a reference-format task whose "kernel" is the text of `file` (`baseline` in the task folder,
    `candidate` in the workspace), which `perf_runner` (the performance command, run from the grading folder) turns
    into build/performance_report.json. Graded as on a GPU profile: the sandbox passes no device here, and the
    commands need none."""
    from kernelgym.grader import GraderConfig
    from kernelgym.hardware import all_profiles
    from kernelgym.reference_tasks import load_reference_task
    from kernelgym.reference_tasks.grader import ReferenceGrader

    def make(file, baseline, candidate, perf_runner, rounds):
        task_dir = tmp_path / "timed"
        task_dir.mkdir()
        (task_dir / file).write_text(baseline)
        (task_dir / "perf.py").write_text(perf_runner)
        (task_dir / "config.yaml").write_text(
            f"source_file_path: [{file}]\ncompile_command: ['python3 -c \"print(1)\"']\n"
            "correctness_command: ['python3 -c \"print(1)\"']\nperformance_command: [python3 perf.py]\n"
            "task_type: triton2triton\n")
        ws = tmp_path / "ws"
        ws.mkdir()
        (ws / file).write_text(candidate)
        grader = ReferenceGrader(load_reference_task(task_dir), all_profiles()["h200"], tmp_path / "grading",
                                 GraderConfig(sandbox="bwrap"), rounds=rounds)
        return grader, ws
    return make
