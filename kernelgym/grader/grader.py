"""The trusted grader. `Grader.grade` reads top-down: compile -> correctness -> performance -> score.

Trust boundary: only the task's editable files are copied out of the workspace (symlinks refused) into a fresh
grading directory, beside pristine copies of the task's other public files (files.py). For a compiled language the
compile gate builds the sources first, in a sandbox of its own where no candidate code runs (build.py). The
candidate then runs in its own process inside the sandbox (harness.py; the protocol both sides share is
protocol.py), so a crash or an out-of-bounds write cannot take the env down, and it cannot read private data.
Correctness is decided here, in the parent, against references computed by trusted code from the pristine task
directory on the same seeded inputs (reference.py): a candidate that patches its own process cannot make a wrong
answer pass. The state of one grading lives in its `GradingSession` (session.py).

Latency: one seam, `_run_harness`, hides the fast path (a warm worker that prepared the grading while the agent
worked, worker.py; outputs compared while the harness still runs, session.compare_early). The plain path (a
fresh process, comparisons at the end) gives the same verdicts (tests/test_fast_path.py).
"""
from __future__ import annotations

import collections
import dataclasses
import json
import math
import os
import secrets
import statistics
import subprocess
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelgym.backends import BACKENDS_DIR, backend_path, get_backend
from kernelgym.errors import TaskSpecError
from kernelgym.grader import build as builds
from kernelgym.grader.cache import GRADING_CACHE, MAX_CACHE_BYTES, baseline_key
from kernelgym.grader import tracer
from kernelgym.grader.files import (MAX_EDITABLE_BYTES, copy_candidate, copy_editable, copy_public, copy_regular_files,
                                    prune_grading_dir, remove_tree, tree_usage, write_new)
from kernelgym.grader.static_check import StaticCheck, run_static_check
from kernelgym.grader.observer import (Observation, ObserverError, cross_check, find_ncu, foreign_kernels, ncu_argv,
                                       parse_report, split)
from kernelgym.grader import outcome
from kernelgym.grader.outcome import FAULT_INFRA, FAULT_TIMEOUT
from kernelgym.grader.protocol import (CHECK_RESULT, HARNESS_LOG, IMPORTED_MARKER, OBSERVED_FINISHED_MARKER,
                                       OBSERVED_PREFIX, OUTPUTS,
                                       PREPARED_MARKER, REQUEST, TIME_RESULT, CheckResult, OutputSlot, Request,
                                       TimeResult, check_seed, parse_check_result, parse_time_result)
from kernelgym.grader.score import arena_score
from kernelgym.grader.session import GradingSession
from kernelgym.grader.timing_stats import TimingError, choose_runs, summarize
from kernelgym.grader.untrusted import UntrustedFileError, load_json_untrusted, read_untrusted
from kernelgym.grader.worker import HARNESS, HARNESS_FILES, GraderWorker
from kernelgym.hardware import HardwareProfile
from kernelgym.launch_options import unsupported_launch_options
from kernelgym.roofline import achieved, evaluate
from kernelgym.sandbox import (PYTHON, BubblewrapSandbox, Limits, UnsandboxedRunner, gpu_devices, kill_group,
                               make_sandbox)
from kernelgym.task import Task

#: Config dtype names (torch's) to the keys of a hardware profile's `peak_tflops`.
PEAK_KEY = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}

#: Where a compiled candidate's build is copied in its grading directory (the request names it from the start).
BUILD_DIR = ".build"

#: The derived limit of one harness process (`GraderConfig.timeout_s` None): compiling and importing, plus per config
#: (one check call, warm-up and 2 x reps timed runs, the comparisons; the CPU interpreter is far slower), at least
#: the floor. A compiled language's build has a limit of its own (`BUILD_TIMEOUT_S`).
TIMEOUT_FLOOR_S = 120.0
COMPILE_BUDGET_S = 60.0
PER_CONFIG_S = {"gpu": 30.0, "interpreter": 60.0}
BUILD_TIMEOUT_S = 900.0

#: The CPU threads of each harness process on a GPU (``OMP_NUM_THREADS``).
HARNESS_CPU_THREADS = 4
#: The most of a kernel trace read (about 150 bytes a kernel: an autotuned kernel's warm-up calls launch thousands).
MAX_TRACE_BYTES = 512 << 20


@dataclass
class _ObservedRun:
    """An observed run started ahead of its grading (`Grader._start_observed_run`), waiting for ``go``."""

    proc: subprocess.Popen
    gdir: Path | None  # None: spawned before its grading (`Grader.spawn`), given one by `_give_request`
    source: Path
    results: Path
    output: collections.deque


@dataclass
class _Spare:
    """The processes `Grader.spawn` started for the grader's first grading, before its seed was drawn."""

    gdir: Path
    worker: GraderWorker
    ahead: _ObservedRun | None

    def stop(self) -> None:
        self.worker.stop()
        if self.ahead is not None:
            kill_group(self.ahead.proc)


def _draw() -> float:
    """A uniform draw in [0, 1) the candidate cannot predict (whether this grading is observed)."""
    return secrets.randbelow(1 << 30) / (1 << 30)


NOT_MEASURED_ON_INTERPRETER = "not measured on the CPU interpreter (Triton interpreter timings mean nothing)"


@dataclass
class GraderConfig:
    """How grading runs. Defaults follow the arena protocol (10 warm-up, 100 timed runs)."""

    warmup: int = 10
    """Untimed calls before timing, per config."""
    reps: int = 100
    """Timed calls per kernel and config; their interquartile mean is reported (timing_stats.py)."""
    rounds: int = 10
    """Rounds in which baseline and candidate alternate; the spread of per-round speedups is the noise band."""
    input_sets: int = 4
    """Distinct input value sets copied in before each timed run, in turn."""
    timeout_s: float | None = None
    """Limit for one harness process (check and time, or the observed run), s. None: derived from the task
    (`Grader.timeout_s`: a compile budget plus a budget per config, at least `TIMEOUT_FLOOR_S`), so a hung kernel
    fails within minutes, not a fixed quarter of an hour."""
    sandbox: str = "bwrap"
    """Sandbox backend for the candidate: 'bwrap' or 'none' (explicit opt-out)."""
    measure: bool = True
    """Run the performance stage (False: correctness only, e.g. the original kernel on unseen configs)."""
    warm_worker: bool = True
    """Start a warm grading worker at reset and prepare the episode's grading in it while the agent works (CUDA
    start, inputs, the baseline's graphs, the references; see worker.py): submit-to-reward then pays only for
    running the candidate. False: each grading starts a fresh sandboxed process."""
    static_check: bool = True
    """Refuse candidates whose Python computes with PyTorch on the entry point's path, or imports the reference
    (provenance.py): a config counts only where the candidate's own kernels did the work."""
    static_check_timeout_s: float = 60.0
    """Wall-clock limit of the static check's sandboxed process, s (a 4 MiB file, the editable-file cap, takes about
    10 s on 2 cores: benchmarks/results/README.md); past it the submission fails compile, saying so."""
    dynamic_check: bool = True
    """Where no outside observer runs (the CPU interpreter, AMD GPUs, `observer` 'off'): the harness records every
    PyTorch operator each checked call runs, in a dispatch mode of its own, and fails a config where one computes
    (anything but allocation, views, copies and fills, `protocol.ALLOWED_TORCH_OPS`, and the task's
    `allowed_torch_ops`). Where the observer runs, its kernel list does this job."""
    early_compare: bool = True
    """Compare the candidate's outputs with the references as the harness writes them, while it still runs (the
    verdicts are the same: every file is checked again once no candidate code runs; tests/test_fast_path.py)."""
    observer: str = "auto"
    """The outside observer (observer.py): the check runs once more under a kernel tracer or profiler that lists every
    kernel of each checked call; a kernel that is not the candidate's own fails that config, and a speedup the
    kernels' device times do not support earns nothing. 'auto': on NVIDIA GPUs where a tool is found (the grade says
    when none was); 'required': a grading it cannot observe fails; 'off'."""
    observer_tool: str = "auto"
    """What observes: 'tracer' (the CUPTI kernel tracer, tracer.py: a few microseconds per kernel; needs a C++
    compiler and CUPTI), 'ncu' (Nsight Compute: profiles one kernel at a time, about 70-100 ms each on the H200), or
    'auto' (the tracer where it builds, else ncu)."""
    observe_fraction: float = 1.0
    """Fraction of gradings observed, drawn at random per grading (below 1 for RL throughput: the observed run costs
    a fresh process); each grade's ``checks`` says whether its grading was observed."""
    observer_margin: float = 0.25
    """How far (a fraction) a measured speedup more than `observer.NOISE` above 1 may exceed the profiler's ratio of
    device times."""
    grading_dir_cap_bytes: int = 16 << 30
    """Disk space a grading directory may take: the candidate's process writes there (its outputs, for big tasks a
    few GB). Checked once the harness is done, not a quota: a grade whose directory took more says so in its
    `checks` (``disk``) and fails correctness."""
    grading_dir_cap_files: int = 100_000
    """Files, directories and links a grading directory may hold once the harness is done (a grading makes a few
    dozen; a Triton cache or a build a few hundred more): past it the grade fails correctness, saying so in `checks`
    (``disk``), as for `grading_dir_cap_bytes`. An empty file costs an inode and no byte."""
    keep_grading_dirs: bool = False
    """Keep each grading directory whole after its grade is read (for debugging a grading: the candidate's outputs
    and whatever it wrote there). By default only the harness's log and result files stay (`prune_grading_dir`)."""


@dataclass
class Stage:
    """One gate: `passed` is None when the stage did not run (an earlier gate failed) or was not measured."""

    name: str
    passed: bool | None
    messages: list[str] = field(default_factory=list)


@dataclass
class Grade:
    """The whole grade of one kernel; `to_dict()` goes into `info["grade"]`.

    `configs` holds one dict per seen config: config, correct, max_abs_err, error, and where measured
    baseline_ms, candidate_ms (interquartile means of the timed runs, ms), speedup and noise_band. `speedup` is the arithmetic mean of per-config
    ratios (as the arena reports); `speedup_geomean` the geometric mean.
    """

    task: str
    hardware: str
    interpreter: bool
    stages: list[Stage]
    configs: list[dict[str, Any]]
    speedup: float | None
    speedup_geomean: float | None
    score: float
    elapsed_s: float
    """Submit to grade, s (with a prepared worker: the candidate's part only)."""
    phases_s: dict[str, float] = field(default_factory=dict)
    """Where `elapsed_s` went, s: ``copy_and_static_check`` (the editable files copied, the static check),
    ``wait_for_observer`` (the observer's background work: the baseline's observation, the run ahead's start),
    ``harness`` (the candidate's process: import, check, timing; of which ``harness_prepare_wait``, with a warm
    worker, waited for its prepared child), ``compare`` (the parent's checks of its outputs against the reference)
    and, where it ran, ``observer`` (the observed run)."""
    outcome: str = ""
    """The grading's one typed outcome, a key of `outcome.OUTCOMES` (decided by `outcome.decide`)."""
    checks: dict[str, str] = field(default_factory=dict)
    """Which provenance checks ran on this grading and how they ended: ``static_check``, ``launch_counter``,
    ``observer`` and ``speedup_cross_check``, each ``passed``, ``failed``, or why it did not run."""

    @property
    def compiled(self) -> bool:
        return bool(self.stages[0].passed)

    @property
    def correct(self) -> bool:
        return bool(self.stages[1].passed)

    def to_dict(self) -> dict[str, Any]:
        """The grade as plain JSON-serializable data (what `info["grade"]` holds)."""
        return {**asdict(self), "compiled": self.compiled, "correct": self.correct}

    def summary(self) -> str:
        """A readable report, as the final observation shows it."""
        lines = [f"Grade for {self.task} on {self.hardware}: score {self.score:.1f}"]
        for st in self.stages:
            mark = {True: "PASS", False: "FAIL", None: "----"}[st.passed]
            lines.append(f"[{mark}] {st.name}")
            lines += [f"    {m}" for m in st.messages]
        for c in self.configs:
            t = (f" baseline {c['baseline_ms']:.4f} ms, candidate {c['candidate_ms']:.4f} ms, "
                 f"speedup {c['speedup']:.3f}x" if c.get("speedup") is not None else "")
            lines.append(f"    {c['config']}: {'correct' if c.get('correct') else 'WRONG'}{t}")
        return "\n".join(lines)


def _text(value: Any, limit: int = 6000) -> str:
    return str(value)[-limit:]


class Grader:
    """Grades the kernel in a workspace for one task on one hardware profile.

    Args:
        task: the task.
        hardware: the hardware profile; `interpreter` profiles skip timing.
        work_dir: where grading directories are made (outside every workspace).
        config: `GraderConfig`.
        configs: the configs to grade on (default: the task's seen configs for this hardware).

    Raises:
        TaskSpecError: the task's language has no backend, or its backend cannot run on `hardware`.
    """

    def __init__(self, task: Task, hardware: HardwareProfile, work_dir: Path, config: GraderConfig | None = None,
                 configs: list[dict] | None = None):
        self.task, self.hardware, self.config = task, hardware, config or GraderConfig()
        self.backend = get_backend(task.spec.language)
        # A registered backend's file (outside kernelgym/backends, whose folder is bound already), bound read-only
        # and named in each request; looked up once, as the module was.
        path = backend_path(task.spec.language)
        self._backend_file = None if path.parent == BACKENDS_DIR else path.resolve()
        if hardware.vendor not in self.backend.VENDORS:
            raise TaskSpecError(f"task {task.name} is written in {task.spec.language}, which runs on "
                                f"{', '.join(sorted(self.backend.VENDORS))} hardware; {hardware.name} is "
                                f"{hardware.vendor}. Pick another task or hardware profile.")
        self.work_dir = Path(work_dir).resolve()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.configs = configs if configs is not None else task.configs_for(hardware.interpreter)
        self.keep_worker = False  # True: the worker serves several gradings (of one kernel; see unseen.evaluate)
        self.device = "cpu" if hardware.interpreter else "cuda"
        self.baseline_dir = self.work_dir / "baseline"  # pristine copy, read-only inside the sandbox
        if not self.baseline_dir.exists():
            self.baseline_dir.mkdir()
            copy_candidate(task, task.root, self.baseline_dir)
        self.worker: GraderWorker | None = None
        self._baseline_build: Path | None = None
        self._prepared: GradingSession | None = None
        self.session: GradingSession | None = None
        """The last grading's session (for benchmarks and tests)."""
        self._observing: _ObservedRun | None = None
        self._observer_thread: threading.Thread | None = None
        self._ahead_lock = threading.Lock()
        self._ahead_token: object | None = None
        self._observed_outputs: Path | None = None
        self._observe_drawn: dict[Path, bool] = {}
        self._tool: str | None = None  # observer_tool(): 'tracer', 'ncu', or why neither runs
        self._tracer_library: Path | None = None
        self._key: tuple[str, str] | None = None  # (observer tool, baseline key): see _baseline_key
        self._spare: _Spare | None = None  # see spawn

    @property
    def timeout_s(self) -> float:
        """The limit of one harness process, s: `GraderConfig.timeout_s`, or derived from the configs graded
        (`COMPILE_BUDGET_S` + `PER_CONFIG_S` per config, at least `TIMEOUT_FLOOR_S`)."""
        if self.config.timeout_s is not None:
            return self.config.timeout_s
        per = PER_CONFIG_S["interpreter" if self.hardware.interpreter else "gpu"]
        return max(TIMEOUT_FLOOR_S, COMPILE_BUDGET_S + per * max(len(self.configs), 1))

    @property
    def _static_check_on(self) -> bool:
        """Whether the static provenance check judges the sources: `GraderConfig.static_check` and the backend's
        ``STATIC_CHECK``."""
        return self.config.static_check and self.backend.STATIC_CHECK

    @property
    def _timed(self) -> bool:
        """Whether gradings time the candidate against the baseline (a GPU, and `GraderConfig.measure`)."""
        return not self.hardware.interpreter and self.config.measure

    # -- the warm worker (the fast path) ---------------------------------------------------------------------------
    def spawn(self) -> None:
        """Start this grader's first grading's processes before its seed is drawn: the warm worker, bound to a new
        grading directory, and (where the observer runs here) the observed run ahead, bound to directories of its
        own. Each imports torch and triton meanwhile and waits; `start_worker(seed)` then only has them prepare. The
        env calls it for the next episode while the episode before is graded, so that a reset followed at once by a
        submit does not wait for two Python processes to start. No candidate code runs in them before that grading;
        `stop_worker` kills them."""
        if self.keep_worker or self._spare is not None:
            return
        gdir = self._new_grading_dir()
        self._seed_kernel_cache(gdir)
        ahead = self._start_observed_run(None, None) if self.observer_unavailable() is None else None
        self._spare = _Spare(gdir, self._new_worker(gdir), ahead)

    def start_worker(self, seed: int | None = None) -> None:
        """Start a warm worker (see worker.py), or take the one `spawn` started. With `seed`, also prepare the grading
        of that seed while the agent works: the next `grade(workspace, seed)` then only imports and runs the candidate
        (harness.prepare: CUDA start, inputs, the baseline's compilation and graphs; here: the reference outputs).
        The worker's sandbox then binds only that grading's directory, which the candidate therefore cannot rename or
        replace.

        Without `seed` the worker may write anywhere under `work_dir`: it serves only `keep_worker` gradings,
        which are of trusted code (the pristine original on unseen configs); `grade` uses it for nothing else."""
        spare, self._spare = self._spare, None
        self.stop_worker()
        self._prepared = None
        if spare is not None and (seed is None or not spare.worker.alive()):
            spare.stop()
            spare = None
        if seed is None:
            self.worker = self._new_worker(None)
            return
        if spare is not None:
            session, self.worker = self._start_session(spare.gdir, seed), spare.worker
        else:
            session = self._new_session(seed)
            self._seed_kernel_cache(session.gdir)
            self.worker = self._new_worker(session.gdir)
        self.worker.prepare(session.gdir / REQUEST)
        self._prepared = session
        spawned = spare.ahead if spare is not None else None
        if self.observer_unavailable() is None:
            observed = self._observe_drawn[session.gdir] = _draw() < self.config.observe_fraction
            self._ahead_token = token = object()
            self._observer_thread = threading.Thread(target=self._prepare_observer, daemon=True,
                                                     args=(session, observed, token, spawned))
            self._observer_thread.start()
        elif spawned is not None:
            kill_group(spawned.proc)

    def _new_worker(self, gdir: Path | None) -> GraderWorker:
        """A warm worker whose sandbox binds the grading directory `gdir` (None: all of `work_dir`, for
        `keep_worker` gradings of trusted code only)."""
        return GraderWorker(gdir or self.work_dir, self._readonly(), self.config.sandbox,
                            gpu=not self.hardware.interpreter, env=self._harness_env(gdir),
                            one_run=not self.keep_worker)

    def _prepare_observer(self, session: GradingSession, observed: bool, token: object,
                          spawned: "_ObservedRun | None" = None) -> None:
        """In the background, one profiler at a time (two profiling at once conflict; seen on the H200): observe the
        baseline unless that is done, then start the candidate's observed run ahead where this grading is observed
        (the one `spawn` started, given its request now, where it still runs)."""
        try:
            self.baseline_observation()
        except ObserverError:
            pass  # said in the grade, where it matters
        if not observed:
            if spawned is not None:
                kill_group(spawned.proc)
            return
        if spawned is not None and spawned.proc.poll() is None and self._give_request(spawned, session):
            run = spawned
        else:
            if spawned is not None:
                kill_group(spawned.proc)
            run = self._start_observed_run(session.gdir, session.seed)
        with self._ahead_lock:
            if self._ahead_token is token:
                self._observing = run
                return
        kill_group(run.proc)  # the grading it was for was given up meanwhile

    def _give_request(self, run: "_ObservedRun", session: GradingSession) -> bool:
        """Write the observed request of `session`'s grading for the run `spawn` started, and let it read it.
        Returns False where the run is gone (a fresh one is started instead)."""
        build = run.source / BUILD_DIR if self.backend.BUILDS else None
        write_new(run.results / REQUEST, json.dumps(self._observer_request(run.source, build, session.seed,
                                                                           run.results).to_json()).encode())
        run.gdir = session.gdir
        try:
            run.proc.stdin.write("request\n")
            run.proc.stdin.flush()
            return True
        except OSError:
            return False

    def stop_worker(self) -> None:
        """Kill the warm worker, if any (and with it any grading it is running), any observed run started ahead, and
        the processes `spawn` started."""
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.stop()
        self.stop_observer()

    def _wait_for_observer(self, timeout_s: float = 120.0) -> None:
        """Wait until the observer's background work is done (the baseline's observation) and the observed run started
        ahead has prepared (it then idles), so that neither runs kernels while the candidate is timed. A run that does
        not prepare in `timeout_s` is given up (the grading observes with a fresh run later)."""
        if self._observer_thread is not None:
            self._observer_thread.join()
        ahead, deadline = self._observing, time.monotonic() + timeout_s
        while ahead is not None and PREPARED_MARKER not in "".join(ahead.output):
            if ahead.proc.poll() is not None or time.monotonic() > deadline:
                self.stop_observer()
                return
            time.sleep(0.02)

    def wait_for_baseline(self) -> None:
        """Block until the observer's background work started by `start_worker` (the pristine baseline's observation,
        then the start of the run ahead) is done. The env calls it before running any command of the agent's: work of
        the agent's on the GPU meanwhile would preempt the baseline's kernels and inflate their observed device times,
        cached for the process, which widens every later speedup cross-check."""
        if self._observer_thread is not None:
            self._observer_thread.join()

    def stop_observer(self) -> None:
        """Kill the observed run started ahead for the next grading, if any (or give up the one being started)."""
        with self._ahead_lock:
            self._ahead_token, ahead, self._observing = None, self._observing, None
        if ahead is not None:
            kill_group(ahead.proc)

    # -- the gates -------------------------------------------------------------------------------------------------
    def grade(self, workspace: Path, seed: int) -> Grade:
        """Grade the editable files in `workspace`. Never raises for a bad kernel: failures are stages.

        Raises:
            TaskSpecError: the task itself is broken (its reference fails, or a trivial output passes it).
        """
        start = time.monotonic()
        session = self.session = self._session_for(seed)
        problems = copy_editable(self.task, Path(workspace).resolve(), session.gdir)
        # Read before any candidate code runs: afterwards the files may be links to anything (/proc/self/mem).
        raw = {} if problems else self._editable_bytes(session.gdir)
        sources = {rel: data.decode(errors="replace") for rel, data in raw.items()}
        static = self.static_check(raw) if self._static_check_on and raw else StaticCheck()
        problems = [*problems, *static.compile_problems]  # unreadable sources, or no verdict: compile fails
        provenance = static.findings
        session.launch_notes = [n for text in sources.values() for n in unsupported_launch_options(text, self.hardware)]
        phases = {"copy_and_static_check": time.monotonic() - start}
        waited = time.monotonic()
        self._wait_for_observer()  # no profiling may overlap the timed runs (ncu flushes the caches per kernel)
        ran = time.monotonic()
        phases["wait_for_observer"] = ran - waited
        check, timed = self._run_candidate(session, problems)
        harness_done = time.monotonic()
        phases["harness"] = harness_done - ran
        if session.prepare_wait_s is not None:
            phases["harness_prepare_wait"] = session.prepare_wait_s
        checks = self._checks_planned(provenance or static.compile_problems)
        # Bytes and entries in one walk: 300,000 empty files take a few MiB and every inode of the host's disk.
        used = tree_usage(session.gdir, self.config.grading_dir_cap_bytes, self.config.grading_dir_cap_files)
        checks["disk"] = (f"failed: the candidate's process filled its grading directory past the cap of "
                          f"{self.config.grading_dir_cap_bytes / 2**30:g} GiB"
                          if used.bytes > self.config.grading_dir_cap_bytes else
                          f"failed: the candidate's process left more than {self.config.grading_dir_cap_files} files "
                          f"and directories in its grading directory (GraderConfig.grading_dir_cap_files)"
                          if used.entries > self.config.grading_dir_cap_files else
                          f"{used.entries} files and directories, {used.bytes / 2**20:.1f} MiB in the grading directory")
        compile_stage = self.compile(problems, check, session)
        correct_stage, rows = Stage("correctness", None), [{"config": c} for c in self.configs]
        perf_stage, speedups = Stage("performance", None), None
        if compile_stage.passed:
            correct_stage, rows = self.check_correctness(session, check, provenance)
            # The harness ran it whatever the static check found: both verdicts are reported.
            if checks["dynamic_check"] == "pending" and check.configs:
                checks["dynamic_check"] = ("failed" if any(c.dynamic_check_failed for c in check.configs)
                                           else "passed")
            if checks["disk"].startswith("failed"):
                correct_stage.passed = False
                correct_stage.messages.append(checks["disk"])
        if correct_stage.passed:
            perf_stage, speedups, timed_ok = self.measure_performance(session, rows, timed)
            if not timed_ok:
                correct_stage.passed = False
                correct_stage.messages.append("the output of the timed runs was wrong (see performance)")
        phases["compare"] = time.monotonic() - harness_done
        if correct_stage.passed and checks["observer"] == "pending":
            observed = time.monotonic()
            speedups = self.observe(session, sources, rows, correct_stage, perf_stage, speedups, checks)
            phases["observer"] = time.monotonic() - observed
        self.stop_observer()  # an observed run started ahead and not needed (an earlier gate failed)
        for name, state in checks.items():
            if state == "pending":
                checks[name] = "not run: an earlier gate failed"
        if not self.config.keep_grading_dirs:  # the grade is read: outputs, caches and builds go, logs stay
            prune_grading_dir(session.gdir)
            for directory in session.observed_dirs:
                remove_tree(directory)
        mean = statistics.fmean(speedups) if speedups else None
        geo = math.exp(statistics.fmean(math.log(s) for s in speedups)) if speedups else None
        score = arena_score(bool(compile_stage.passed), bool(correct_stage.passed), mean)
        return Grade(task=self.task.env_id, hardware=self.hardware.id, interpreter=self.hardware.interpreter,
                     stages=[compile_stage, correct_stage, perf_stage], configs=rows, speedup=mean,
                     speedup_geomean=geo, score=score, elapsed_s=time.monotonic() - start, phases_s=phases,
                     checks=checks,
                     outcome=outcome.decide(compiled=compile_stage.passed, correct=correct_stage.passed,
                                            performance=perf_stage.passed, configs=rows, checks=checks,
                                            fault=session.fault))

    def compile(self, problems: list[str], check: CheckResult, session: GradingSession) -> Stage:
        """Compile gate: the files are in place, the sources build (compiled languages), the module imports, and
        (Triton) every kernel compiles at its first call."""
        if problems:
            return Stage("compile", False, problems)
        if check.stage == "compile":
            return Stage("compile", False, [check.error or "the candidate did not import"])
        return Stage("compile", True, [*session.build_notes, "module imported and kernels compiled",
                                       *session.launch_notes])

    def _editable_bytes(self, gdir: Path) -> dict[str, bytes]:
        """The editable files just copied into `gdir` (regular files, checked by `copy_editable`), as bytes."""
        return {rel: read_untrusted(gdir / rel, MAX_EDITABLE_BYTES) for rel in self.task.spec.editable_files}

    def static_check(self, raw: dict[str, bytes]) -> StaticCheck:
        """The static provenance check (provenance.py) over the candidate's editable files `raw`, in a sandboxed
        process of its own under `GraderConfig.static_check_timeout_s` (static_check.py)."""
        spec = self.task.spec
        return run_static_check(raw, spec.entry_point, spec.reference, sandbox=self.config.sandbox,
                                timeout_s=self.config.static_check_timeout_s, max_bytes=MAX_EDITABLE_BYTES)

    def provenance_note(self) -> str:
        """Which provenance checks run in the candidate's own process, for the correctness stage's messages (the
        outside observer's verdict follows, where it runs)."""
        checks = []
        if self._static_check_on:
            checks.append("static check of the sources (Python syntax tree; C++ tokens)")
        if self._dynamic_check:
            checks.append("a record of the PyTorch operators each checked call ran")
        if self.backend.LaunchCounter is not None:
            checks.append(f"a launch counter of the candidate's own {self.backend.LANGUAGE} kernels")
        observer = self.observer_unavailable()
        return f"provenance: {', '.join(checks) or 'none'}" + (f"; no outside observer ({observer})" if observer else "")

    def observer_unavailable(self) -> str | None:
        """Why the outside observer cannot run on this grader's hardware (None: it can)."""
        if self.config.observer == "off":
            return "observer='off'"
        if self.hardware.interpreter:
            return "not available on the CPU interpreter: no GPU, no profiler"
        if self.hardware.vendor != "nvidia":
            return f"not implemented for {self.hardware.vendor} GPUs (rocprofv3 would serve; never run here)"
        if not gpu_devices():
            return "no GPU device nodes (/dev/nvidia*) on this machine"
        tool = self.observer_tool()
        return tool if tool not in ("tracer", "ncu") else None

    def observer_tool(self) -> str:
        """'tracer' or 'ncu', as `GraderConfig.observer_tool` asks and the machine allows; else why neither can run
        (the kernel tracer is built here on first use, about 0.5 s, then cached)."""
        if self._tool is None:
            wanted, why = self.config.observer_tool, []
            if wanted not in ("auto", "tracer", "ncu"):
                raise ValueError(f"observer_tool {wanted!r}: expected 'auto', 'tracer' or 'ncu'")
            if wanted in ("auto", "tracer"):
                try:
                    self._tracer_library = tracer.build()
                    self._tool = "tracer"
                except ObserverError as e:
                    why.append(f"kernel tracer: {e}")
            if self._tool is None and wanted in ("auto", "ncu"):
                if find_ncu() is not None:
                    self._tool = "ncu"
                else:
                    why.append("Nsight Compute (ncu) not found on PATH or in /usr/local/cuda/bin")
            if self._tool is None:
                self._tool = "; ".join(why)
        return self._tool

    def _observer_name(self) -> str:
        return "the CUPTI kernel tracer" if self._tool == "tracer" else "Nsight Compute"

    @property
    def _dynamic_check(self) -> bool:
        """Whether the harness runs the dynamic check (`GraderConfig.dynamic_check`): asked for, and no outside
        observer on this machine."""
        return self.config.dynamic_check and self.observer_unavailable() is not None

    def _checks_planned(self, provenance: list[str]) -> dict[str, str]:
        """The grade's ``checks`` before the gates run: what will run (``pending``) and why the rest will not."""
        counter = self.backend.LaunchCounter is not None
        unavailable = self.observer_unavailable()
        drawn = self._observe_drawn.get(self.session.gdir)  # drawn when the grading was prepared, else now
        if unavailable is None and not (drawn if drawn is not None else _draw() < self.config.observe_fraction):
            unavailable = f"not sampled (observe_fraction={self.config.observe_fraction:g})"
        if unavailable and self.config.observer == "required":
            unavailable = "pending"  # `observe` fails the grading, saying why
        observer = unavailable or "pending"
        dynamic = ("pending" if self._dynamic_check else "off" if not self.config.dynamic_check
                   else "off: the outside observer lists the kernels on this machine")
        return {"static_check": ("failed" if provenance else "passed") if self._static_check_on else "off",
                "dynamic_check": dynamic,
                "launch_counter": "ran in the candidate's process" if counter
                else f"none for {self.backend.LANGUAGE} kernels",
                "observer": observer,
                "speedup_cross_check": "pending" if observer == "pending" and not self.hardware.interpreter
                else "not run: no observer"}

    def check_correctness(self, session: GradingSession, check: CheckResult,
                          provenance: list[str] | None = None) -> tuple[Stage, list[dict]]:
        """Correctness gate: every config's outputs, as the harness saved them, compared here with the reference;
        no config counts where the static provenance check found PyTorch doing the work (`provenance`)."""
        if provenance:
            rows = [{"config": cfg, "correct": False, "max_abs_err": None,
                     "error": "provenance: the output may be computed by PyTorch, not the candidate's kernels"}
                    for cfg in self.configs]
            return Stage("correctness", False, ["provenance: the candidate's own kernels must do the work; on the "
                                                "entry point's path:", *provenance[:20], self.provenance_note()]), rows
        rows, messages = [], []
        if check.error:
            messages.append(check.error)
        for i, cfg in enumerate(self.configs):
            row = {"config": cfg, "correct": False, "max_abs_err": None, "error": None}
            ran = check.configs[i] if i < len(check.configs) else None
            if ran is None:
                row["error"] = "not run (the process ended early)"
            elif not ran.ok:
                row["error"] = ran.error
            else:
                ok, msg, err = session.compared(*session.checked_outputs()[i])
                row.update(correct=ok, max_abs_err=err, error=None if ok else msg)
            if row["error"]:
                lines = str(row["error"]).strip().splitlines() or [""]
                messages.append(f"{cfg}: {lines[-1]}")
            rows.append(row)
        passed = bool(rows) and all(r["correct"] for r in rows)
        if passed:
            messages.insert(0, f"all {len(rows)} configs within tolerance")
        messages.append(self.provenance_note())
        return Stage("correctness", passed, messages), rows

    def measure_performance(self, session: GradingSession, rows: list[dict],
                            res: TimeResult | None) -> tuple[Stage, list[float] | None, bool]:
        """Performance: baseline and candidate timed in one process, interleaved in rounds (harness.py);
        speedup = baseline time / candidate time per config, each the interquartile mean of its runs
        (timing_stats.py). The timed path's outputs are compared with the reference too.

        Returns (stage, per-config speedups or None, timed outputs correct). Speedup is withheld when a
        config's achieved bandwidth or FLOP rate is above the hardware profile's peak (a measurement error).
        """
        if self.hardware.interpreter:
            return Stage("performance", None, [NOT_MEASURED_ON_INTERPRETER]), None, True
        if not self.config.measure:
            return Stage("performance", None, ["not measured (measure=False)"]), None, True
        if res is None or not res.ok:
            return Stage("performance", False, [res.error if res else "timing failed"]), None, True
        speedups, messages, flagged = [], [], False
        for i, (row, t) in enumerate(zip(rows, res.configs)):
            cfg = row["config"]
            if t.wrong_output:  # a timed run's output differed from the baseline's on the same inputs
                row.update(correct=False, error=f"output of the timed path is wrong: {t.wrong_output}")
                return Stage("performance", False, [f"{cfg}: output of the timed path is wrong: {t.wrong_output}"]), None, False
            try:  # reported by the candidate's process: checked and summarized here
                if not t.ok:
                    raise TimingError(t.error or "timing failed")
                base_runs, cand_runs, note = choose_runs({
                    "baseline_runs_ms": t.baseline_runs_ms, "candidate_runs_ms": t.candidate_runs_ms,
                    "baseline_outer_runs_ms": t.baseline_outer_runs_ms or None,
                    "candidate_outer_runs_ms": t.candidate_outer_runs_ms or None})
                stats = summarize(base_runs, cand_runs, self.config.rounds)
            except (TimingError, ArithmeticError) as e:  # numbers from the candidate's process: anything may come
                return Stage("performance", False, [f"{cfg}: timing failed: {e}"]), None, True
            if note:
                messages.append(f"{cfg}: {note}")
            ok, msg, _ = session.compared(*session.timed_outputs()[i])
            if not ok:
                # Blocks kernels that are honest while checked and cheap while timed.
                row.update(correct=False, error=f"output of the timed path is wrong: {msg}")
                return Stage("performance", False, [f"{cfg}: output of the timed path is wrong: {msg}"]), None, False
            row.update(stats, timing_mode=note or t.candidate_mode, baseline_timing_mode=note or t.baseline_mode)
            flagged |= self._above_peak(cfg, row, messages)
            speedups.append(row["speedup"])
        mean = statistics.fmean(speedups)
        messages.insert(0, f"speedup {mean:.3f}x (arithmetic mean of {len(speedups)} configs), baseline and "
                           f"candidate interleaved in {self.config.rounds} rounds, {self.config.warmup} warm-up + "
                           f"{self.config.reps} timed runs each, caches flushed before every run"
                           + ("" if res.persisting_l2_reset else "; persisting-L2 reset unavailable"))
        return Stage("performance", not flagged, messages), (None if flagged else speedups), True

    def _above_peak(self, cfg: dict, row: dict, messages: list[str]) -> bool:
        """Add the roofline numbers to `row`; True (with a message) where the achieved bandwidth or FLOP rate is
        above the hardware's peak: a measurement error, which earns no speedup."""
        roof = self.task.spec.roofline
        if not roof:
            return False
        gbps, tflops = achieved(evaluate(roof.bytes, cfg), evaluate(roof.flops, cfg), row["candidate_ms"])
        peaks = self.hardware.peak_tflops
        peak_tflops = peaks.get(PEAK_KEY.get(cfg.get("dtype"), cfg.get("dtype")), 0) or max(peaks.values(), default=0)
        row.update(achieved_gbps=gbps, achieved_tflops=tflops, bandwidth_fraction=gbps / self.hardware.peak_bandwidth_gbps,
                   flops_fraction=tflops / peak_tflops if peak_tflops else None)
        flagged = False
        if row["bandwidth_fraction"] > 1.0:
            flagged = True
            messages.append(f"{cfg}: {gbps:.0f} GB/s is above the {self.hardware.name} peak "
                            f"({self.hardware.peak_bandwidth_gbps:.0f} GB/s): measurement error, no speedup")
        if (row["flops_fraction"] or 0) > 1.0:
            flagged = True
            messages.append(f"{cfg}: {tflops:.1f} TFLOP/s is above the {self.hardware.name} peak "
                            f"({peak_tflops:.1f} TFLOP/s): measurement error, no speedup")
        return flagged

    # -- the outside observer (observer.py) -----------------------------------------------------------------------
    def observe(self, session: GradingSession, sources: dict[str, str], rows: list[dict], correct: Stage,
                perf: Stage, speedups: list[float] | None, checks: dict[str, str]) -> list[float] | None:
        """Run the candidate's check once more under the profiler and judge what it saw: a config whose calls ran a
        kernel that is neither the candidate's own nor allowed, or whose observed output is wrong, fails
        (`correct` and its row say why); a speedup the observed device times do not support is withheld (`perf`
        says why). Updates `checks`; returns the speedups that stand (None where withheld)."""
        unavailable = self.observer_unavailable()
        if unavailable:  # observer='required'
            checks["observer"] = checks["speedup_cross_check"] = f"failed: required, but {unavailable}"
            correct.passed = False
            correct.messages.append(f"outside observer required, but {unavailable}")
            return None
        own = self.backend.own_kernel_names(sources)
        try:
            observation = self._observed_run(session, sources)
        except ObserverError as e:
            try:  # where the pristine baseline cannot be observed either, the machine is at fault, not the kernel
                self.baseline_observation()
            except ObserverError as machine:
                checks["observer"] = checks["speedup_cross_check"] = f"unavailable: {machine}"
                correct.messages.append(f"outside observer unavailable: {machine}")
                return speedups
            checks["observer"] = checks["speedup_cross_check"] = f"failed: {e}"
            correct.passed = False
            correct.messages.append(f"outside observer: {e}")
            return None
        failed = []
        bare = self.backend.BARE_KERNEL_NAMES
        for i, (row, foreign) in enumerate(zip(rows, foreign_kernels(observation, own, bare))):
            ok, msg, _ = session.compared(self._observed_outputs, i, check_seed(session.seed, i))
            if foreign:
                row.update(correct=False, error=f"provenance: kernels that are not the candidate's own ran: "
                                                f"{', '.join(k[:120] for k in foreign[:5])}")
            elif not ok:
                row.update(correct=False, error=f"observed run: {msg}")
            row["observed_ms"] = observation.checked_ms(i)
            if not row["correct"]:
                failed.append(f"{row['config']}: {row['error']}")
        if failed:
            checks["observer"], checks["speedup_cross_check"] = "failed", "not run: the observer failed the kernel"
            correct.passed = False
            correct.messages += [f"outside observer ({self._observer_name()}): every kernel of each checked call must be the "
                                 "candidate's own (or a fill or copy):", *failed[:10]]
            return None
        checks["observer"] = "passed"
        correct.messages.append(f"outside observer ({self._observer_name()}): only the candidate's own kernels "
                                f"({', '.join(sorted(own)) or 'none found'}) and allowed fills/copies ran")
        if not speedups:
            checks["speedup_cross_check"] = "not run: no speedup measured"
            return speedups
        try:
            baseline = self.baseline_observation()
        except ObserverError as e:
            checks["speedup_cross_check"] = f"unavailable: the baseline could not be observed: {e}"
            perf.messages.append(f"speedup not cross-checked: the baseline could not be observed: {e}")
            return speedups
        refused = []
        for i, row in enumerate(rows):
            row["observed_baseline_ms"] = baseline.checked_ms(i)
            why = cross_check(row["speedup"], row["observed_baseline_ms"], row["observed_ms"], self.config.observer_margin)
            if why:
                refused.append(f"{row['config']}: {why}")
        if refused:
            checks["speedup_cross_check"] = "failed"
            perf.passed = False
            perf.messages += ["speedup withheld: the profiler's device times do not support it", *refused]
            return None
        checks["speedup_cross_check"] = "passed"
        return speedups

    def baseline_observation(self) -> Observation:
        """The pristine baseline's observed run on this grader's configs (its device times per config), made once
        per task, hardware and configs in this process (in the background by `start_worker`, or here).

        With ``observer_tool='auto'``, a kernel tracer that builds but fails here (CUPTI refused at run time) gives way
        to Nsight Compute where it is found: only task code ran, so the machine is at fault, not a candidate.

        Raises:
            ObserverError: the baseline's run under the profiler failed or its report is unusable.
        """
        try:
            return GRADING_CACHE.observation(self._baseline_key(), self._run_baseline_observation)
        except ObserverError:
            if not (self._tool == "tracer" and self.config.observer_tool == "auto" and find_ncu()):
                raise
            self._tool = "ncu"
            return GRADING_CACHE.observation(self._baseline_key(), self._run_baseline_observation)

    def _baseline_key(self) -> str:
        """The key of this grader's baseline entries in the grading cache (cache.py); computed once per observer tool."""
        tool = self.observer_tool()
        if self._key is None or self._key[0] != tool:
            self._key = (tool, baseline_key(self.task.root, self.hardware.id, self.configs, self.config.sandbox, tool))
        return self._key[1]

    def _run_baseline_observation(self) -> Observation:
        build = self._baseline_built() if self.backend.BUILDS else None
        results = self._observer_dir()
        sandbox, argv = self._observer_command(self.baseline_dir, build, 0, results)
        run = sandbox.run(argv, limits=Limits(timeout_s=self.timeout_s, max_output_bytes=8000))
        observation = self._read_observation(results, run.timed_out, run.returncode, run.output)
        if self.backend.KERNEL_CACHE_DIR is not None:
            GRADING_CACHE.keep_kernels(self._baseline_key(), results / self.backend.KERNEL_CACHE_DIR, "launchers",
                                       self.backend.KERNEL_LAUNCHERS)
        remove_tree(results)
        return observation

    def _keep_kernel_cache(self, gdir: Path) -> None:
        """Called once the worker has prepared the grading in `gdir` and before any candidate code runs there: keep a
        copy of its Triton cache (the baseline's kernels and launchers, compiled from the pristine task) for later
        gradings, the first time only."""
        cache_dir = self.backend.KERNEL_CACHE_DIR
        if self.hardware.interpreter or cache_dir is None:  # nothing is compiled there (the key looks for the tracer)
            return
        GRADING_CACHE.keep_kernels(self._baseline_key(), gdir / cache_dir)

    def _seed_kernel_cache(self, gdir: Path) -> None:
        """Fill the new grading directory `gdir`'s Triton cache from the kept copy, if any (its group files moved to
        point there): the harness then finds the baseline's kernels compiled. What the candidate later does to
        these files touches only its own grading."""
        cache_dir = self.backend.KERNEL_CACHE_DIR
        if self.hardware.interpreter or cache_dir is None:
            return
        GRADING_CACHE.seed_kernels(self._baseline_key(), gdir / cache_dir)

    def _observer_dir(self) -> Path:
        """A new owner-only directory beside the grading directories: an observed run's only writable one."""
        results = self.work_dir / f"observed-{uuid.uuid4().hex[:12]}"
        results.mkdir(mode=0o700)
        return results

    def _observer_source(self) -> Path:
        """A new owner-only directory holding the task's pristine public files, where an observed run's candidate
        sources are written (read-only in its sandbox)."""
        source = self.work_dir / f"observed-src-{uuid.uuid4().hex[:12]}"
        source.mkdir(mode=0o700)
        copy_public(self.task, source)
        return source

    def _observer_request(self, directory: Path, build: Path | None, seed: int, results: Path) -> Request:
        """The request of an observed run of the code in `directory` (its build in `build`) writing to `results`."""
        return dataclasses.replace(self._request(directory, seed, timed=False), mode="check", observe=True,
                                   observer_tool=self.observer_tool(), results_directory=str(results),
                                   build_directory=str(build) if build else None)

    def _observer_command(self, directory: Path, build: Path | None, seed: int, results: Path,
                          write_request: bool = True) -> tuple[BubblewrapSandbox | UnsandboxedRunner, list[str]]:
        """The sandbox and command line of an observed run of the code in `directory` (its build in `build`; both
        bound read-only) whose only writable directory is `results`: the harness's check under the profiler. The
        request is written into `results` (`write_request`; else later, by `_give_request`)."""
        tool = self.observer_tool()
        if write_request:
            write_new(results / REQUEST, json.dumps(self._observer_request(directory, build, seed, results)
                                                    .to_json()).encode())
        readonly = [*HARNESS_FILES, *self._readonly(), directory,
                    *([build] if build and not build.is_relative_to(directory) else [])]
        env = self._harness_env(results)
        if tool == "tracer":
            readonly.append(self._tracer_library)
            env.update(tracer.env(self._tracer_library, results))
            argv = [PYTHON, str(HARNESS), str(results / REQUEST)]
        else:
            argv = [*ncu_argv(find_ncu(), str(results / "ncu.csv")), PYTHON, str(HARNESS), str(results / REQUEST)]
        sandbox = make_sandbox(self.config.sandbox, results, readonly=readonly, gpu=True, env=env)
        return sandbox, argv

    def _start_observed_run(self, gdir: Path | None, seed: int | None) -> "_ObservedRun":
        """Start the candidate's observed run ahead, while the agent works: the profiler and the harness start, CUDA
        and the inputs are prepared, then it waits for ``go`` (sent by `_observed_run` once the candidate's sources
        are copied into its own read-only directory, beside the task's pristine public files). With `seed` None
        (`spawn`: the grading is not drawn yet) it waits for its request first (`_give_request`)."""
        source, results = self._observer_source(), self._observer_dir()
        sandbox, argv = self._observer_command(source, source / BUILD_DIR if self.backend.BUILDS else None, seed or 0,
                                               results, write_request=seed is not None)
        argv += ["--wait-go"] if seed is not None else ["--wait-go", "--wait-request"]
        # A spawned run may wait for its grading as long as the episode before takes; `_wait_observed` bounds its run.
        proc = sandbox.popen(argv, limits=Limits(timeout_s=self.timeout_s if seed is not None else 24 * 3600))
        output: collections.deque[str] = collections.deque(maxlen=400)
        threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True).start()
        return _ObservedRun(proc, gdir, source, results, output)

    def _observed_run(self, session: GradingSession, sources: dict[str, str]) -> Observation:
        """The candidate's observed run: the run started ahead for this grading (`start_worker`) where there is one
        still waiting, else a fresh one. Either way it imports `sources`, the editable files as read before any
        candidate code ran (a file the candidate rewrote while checked is not what it observes), and for a compiled
        language the trusted build step's output.

        Raises:
            ObserverError: the run timed out, failed, or its report is missing or incomplete.
        """
        if self._observer_thread is not None:
            self._observer_thread.join()  # the observed run started ahead may still be starting
        with self._ahead_lock:
            self._ahead_token, ahead, self._observing = None, self._observing, None
        session.observer_ahead = "none started"  # the used run's own line follows its exit
        if ahead is not None and (ahead.gdir != session.gdir or ahead.proc.poll() is not None):
            code = ahead.proc.poll()
            kill_group(ahead.proc)  # prepared for another grading, or died before go: no candidate code ran in it
            session.observer_ahead = ("prepared for another grading" if code is None else
                                      f"exited with code {code} before go: {''.join(ahead.output)[-1500:]}")
            ahead = None
        source, results = (ahead.source, ahead.results) if ahead else (self._observer_source(), self._observer_dir())
        for rel, text in sources.items():
            write_new(source / rel, text.encode())
        # What the checked run compiled (its process is gone): the observed run need not compile it again.
        cache_dir = self.backend.KERNEL_CACHE_DIR
        if cache_dir is not None:
            copy_regular_files(session.gdir / cache_dir, results / cache_dir, MAX_CACHE_BYTES,
                               self.backend.KERNEL_ARTIFACTS)
            # The host launchers (Triton's: shared libraries, about 0.1-1 s of gcc each) as the baseline's observed
            # run built them: only task code ran there, and a candidate whose kernels share the baseline's
            # signatures reuses them.
            GRADING_CACHE.seed_kernels(self._baseline_key(), results / cache_dir, "launchers",
                                       self.backend.KERNEL_LAUNCHERS)
        build = session.trusted_build
        if build is not None:
            builds.copy_build(build, source / BUILD_DIR)
        if ahead is None:
            sandbox, argv = self._observer_command(source, source / BUILD_DIR if build else None, session.seed,
                                                   results)
            run = sandbox.run(argv, limits=Limits(timeout_s=self.timeout_s, max_output_bytes=8000))
            timed_out, code, output = run.timed_out, run.returncode, run.output
        else:
            timed_out, went = False, time.monotonic()
            try:
                ahead.proc.stdin.write("go\n")
                ahead.proc.stdin.close()
                finished = self._wait_observed(ahead)
            except subprocess.TimeoutExpired:
                timed_out, finished = True, False
            except OSError:
                finished = False  # it died meanwhile: its exit code and output say how
            finally:
                kill_group(ahead.proc)
            # Ended by us once it said it finished (the tracer's trace is flushed by then): that is a clean exit.
            code, output = 0 if finished else ahead.proc.returncode, "".join(ahead.output)
            session.observer_ahead = f"used: go to {'finished' if finished else 'exit'} {time.monotonic() - went:.2f} s"
        self._observed_outputs = results / (OBSERVED_PREFIX + OUTPUTS)
        session.observed_dirs = [source, results]  # removed once the grade is read
        session.observer_log = output[-4000:]  # the observed run's harness log (phases), for diagnosis
        return self._read_observation(results, timed_out, code, output)

    def _wait_observed(self, ahead: "_ObservedRun") -> bool:
        """Wait for the observed run started ahead to exit or, under the kernel tracer, to say it has finished
        (`OBSERVED_FINISHED_MARKER`: its results and trace are written; the caller then ends its sandbox, which saves
        CUDA's teardown). Returns whether it said so. Under ncu, which writes its report at exit, it waits for the exit.

        Raises:
            subprocess.TimeoutExpired: neither within the grader's limit.
        """
        deadline = time.monotonic() + self.timeout_s
        while ahead.proc.poll() is None:
            if self._tool == "tracer" and OBSERVED_FINISHED_MARKER in "".join(list(ahead.output)[-8:]):
                return True
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(ahead.proc.args, self.timeout_s)
            time.sleep(0.005)
        return False

    def _read_observation(self, results: Path, timed_out: bool, code: int, output: str) -> Observation:
        """The observed run's result and the profiler's report in `results`, read once its sandbox is gone.

        Raises:
            ObserverError: the run timed out or failed, or its report is missing or incomplete.
        """
        if timed_out:
            raise ObserverError(f"the observed run passed the {self.timeout_s:.0f} s limit")
        try:
            check = parse_check_result(load_json_untrusted(results / (OBSERVED_PREFIX + CHECK_RESULT)),
                                       len(self.configs))
            if self._tool == "tracer":
                kernels = tracer.parse_trace(results, lambda path: read_untrusted(path, MAX_TRACE_BYTES))
            else:
                kernels = parse_report(read_untrusted(results / "ncu.csv", 64 << 20).decode(errors="replace"))
        except UntrustedFileError as e:
            raise ObserverError(f"the observed run left no result ({e}); exit code {code}:\n"
                                f"{output[-1500:]}") from None
        if code != 0:
            raise ObserverError(f"the profiler exited with code {code}:\n{output[-1500:]}")
        if not check.ok or len(check.configs) != len(self.configs) or not all(c.ok for c in check.configs):
            errors = [c.error for c in check.configs if not c.ok] or [check.error]
            raise ObserverError(f"the check failed in the observed run: {str(errors[0])[-1500:]}")
        return split(kernels, len(self.configs), flushed=self._tool == "tracer")

    # -- running the candidate -------------------------------------------------------------------------------------
    def _run_candidate(self, session: GradingSession, problems: list[str]) -> tuple[CheckResult, TimeResult | None]:
        """Build (compiled languages), then run the harness on the session's directory, comparing outputs as they
        appear where `early_compare` is on. Returns the parsed (check, timing) results."""
        n = len(self.configs)
        if problems:
            return CheckResult("compile", False, [], "; ".join(problems)), None
        if self.backend.BUILDS:
            failed = self._build(session)
            if failed is not None:
                return failed, None
        done, threads = threading.Event(), []
        if self.config.early_compare:
            threads = [threading.Thread(target=session.compare_early, args=(p, done), daemon=True)
                       for p in (session.checked_outputs(), session.timed_outputs()) if p]
        for t in threads:
            t.start()
        try:
            check, timed = self._run_harness(session.gdir, session.seed)
        finally:
            done.set()
            for t in threads:
                t.join()
        return parse_check_result(check, n), (None if timed is None else parse_time_result(timed, n))

    def _build(self, session: GradingSession) -> CheckResult | None:
        """The compile gate of a compiled language: the candidate's build (cached by its sources), copied into the
        grading directory's `BUILD_DIR`, which the request named from the start (a warm worker read it before the
        sources were known). No candidate code runs before the harness loads that copy. Returns a failed check
        result with the compiler log, or None when it built."""
        result = self._build_sources(session.gdir)
        if not result.ok:
            return CheckResult("compile", False, [], f"the candidate's sources did not build:\n{result.log[-6000:]}")
        builds.copy_build(result.directory, session.gdir / BUILD_DIR)
        session.trusted_build = result.directory  # the observed run loads this one, which no candidate code could touch
        session.build_notes = ["build cached: sources unchanged" if result.cached else "built"]
        return None

    def _build_sources(self, source_dir: Path) -> builds.BuildResult:
        """The task's sources in `source_dir` built for this hardware's architecture (the profile's, e.g. sm_90;
        none on the CPU), or found in the build cache."""
        spec = self.task.spec
        return builds.build(self.backend, source_dir, spec.editable_files, spec.entry_point, sandbox=self.config.sandbox,
                            timeout_s=self.config.timeout_s or BUILD_TIMEOUT_S,
                            arch=None if self.hardware.interpreter else self.hardware.arch)

    def _baseline_built(self) -> Path:
        """The pristine baseline's build (compiled languages), built once per grader (cached across graders).

        Raises:
            TaskSpecError: the task's own baseline does not build.
        """
        if self._baseline_build is None:
            result = self._build_sources(self.baseline_dir)
            if not result.ok:
                raise TaskSpecError(f"{self.task.root}: the task's baseline does not build:\n{result.log[-6000:]}")
            self._baseline_build = result.directory
        return self._baseline_build

    def _run_harness(self, gdir: Path, seed: int) -> tuple[dict, dict | None]:
        """Run harness.py on `gdir`: through the warm worker when one is up, else in a fresh sandboxed process.
        Returns the raw (check result, timing result or None) as the harness wrote them (untrusted; parsed by
        `_run_candidate`); failures are results, not raises."""
        check_path, time_path = gdir / CHECK_RESULT, gdir / TIME_RESULT
        timed_out, output = False, None
        if self.worker is not None and self.worker.alive():
            asked = time.monotonic()

            def started() -> None:
                if self.session is not None:
                    self.session.prepare_wait_s = time.monotonic() - asked
                self._keep_kernel_cache(gdir)

            code, timed_out, unprepared = self.worker.request(gdir / REQUEST, self.timeout_s, on_started=started)
            if not self.keep_worker:  # one grading per worker: nothing a candidate did to it outlives this grading
                self.worker.stop()
                self.worker = None
            try:
                output = read_untrusted(gdir / HARNESS_LOG, 1 << 20).decode(errors="replace")
            except UntrustedFileError:
                output = ""
            if unprepared:
                output = None  # the preparation failed before any candidate code ran: a fresh process grades
            # Otherwise the result stands, whatever it is: a candidate that killed the worker or deleted its log
            # gets no second run (and no second chance at the grading directory's request).
        fresh = output is None
        if fresh:
            # The parent's own copy, never read back from the grading directory: the harness deletes the file once it
            # has prepared (the seed is not the candidate's).
            (gdir / REQUEST).unlink(missing_ok=True)
            write_new(gdir / REQUEST, json.dumps(self._request(gdir, seed, self._timed).to_json()).encode())
            sandbox = make_sandbox(self.config.sandbox, gdir, readonly=[*HARNESS_FILES, *self._readonly()],
                                   gpu=not self.hardware.interpreter, env=self._harness_env(gdir))
            # Alone in its pid namespace (bwrap), the harness stops every other process before it writes a result.
            kill = ["--kill-others"] if self.config.sandbox == "bwrap" else []
            run = sandbox.run([PYTHON, str(HARNESS), str(gdir / REQUEST), *kill],
                              limits=Limits(timeout_s=self.timeout_s, max_output_bytes=8000))
            timed_out, output, code = run.timed_out, run.output, run.returncode
        if timed_out:
            self.session.fault = FAULT_TIMEOUT
            return {"stage": "check", "ok": False, "configs": [],
                    "error": f"the candidate ran past the {self.timeout_s:.0f} s limit and was killed"}, None
        try:
            check = load_json_untrusted(check_path)
        except UntrustedFileError:
            # Died with no result: before the import finished it is a compile failure, after it a runtime one.
            stage = "compile" if IMPORTED_MARKER not in output else "check"
            if fresh and PREPARED_MARKER not in output:
                # The trusted pipe's head holds the harness's first lines: without the marker, no candidate code ran
                # (the sandbox did not start, CUDA or the inputs failed): the machine's fault, not the kernel's.
                self.session.fault = FAULT_INFRA
            return {"stage": stage, "ok": False, "configs": [],
                    "error": f"the candidate process died (exit code {code}):\n{output[-3000:]}"}, None
        try:
            timed = load_json_untrusted(time_path) if os.path.lexists(time_path) else None
        except UntrustedFileError:
            timed = None
        if timed is None and self._timed and check.get("stage") == "check":
            timed = {"stage": "time-failed", "error": f"timing produced no result:\n{output[-3000:]}"}
        return check, timed

    # -- sessions --------------------------------------------------------------------------------------------------
    def _session_for(self, seed: int) -> GradingSession:
        """The session prepared by `start_worker` for this seed, or a fresh one (graded by a fresh process)."""
        prepared, self._prepared = self._prepared, None
        if prepared is not None and prepared.seed == seed and self.worker is not None and self.worker.alive():
            prepared.started = time.monotonic()
            return prepared
        if not self.keep_worker:
            self.stop_worker()  # prepared for another seed, or not prepared: a fresh process grades
        return self._new_session(seed)

    def _new_session(self, seed: int) -> GradingSession:
        """A fresh grading directory with the task's pristine public files and the harness request for `seed`; the
        references start computing now. The editable files are copied in at grading time."""
        return self._start_session(self._new_grading_dir(), seed)

    def _new_grading_dir(self) -> Path:
        """A new owner-only grading directory under `work_dir` holding the task's pristine public files."""
        gdir = self.work_dir / f"grade-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
        gdir.mkdir(parents=True, mode=0o700)  # owner-only: what the candidate leaves there is out of other users' reach
        copy_public(self.task, gdir)
        return gdir

    def _start_session(self, gdir: Path, seed: int) -> GradingSession:
        """The session of grading `gdir` (made by `_new_grading_dir`) with `seed`: its request written, its
        references computing from now."""
        timed = self._timed
        write_new(gdir / REQUEST, json.dumps(self._request(gdir, seed, timed).to_json()).encode())
        seen = self.configs == self.task.configs_for(self.hardware.interpreter)
        return GradingSession.start(self.task, gdir, seed, self.configs, timed, gpu=not self.hardware.interpreter,
                                    seen=seen)

    def _request(self, gdir: Path, seed: int, timed: bool) -> Request:
        """The harness request for grading `gdir` (mode ``grade``: check, then timing where `timed`)."""
        spec = self.task.spec
        tolerances = [[None if (t := spec.tolerance_for(o, cfg)) is None else t.model_dump() for o in spec.outputs]
                      for cfg in self.configs]
        builds_here = self.backend.BUILDS
        build_dirs = {"build_directory": str(gdir / BUILD_DIR) if builds_here else None,
                      "baseline_build_directory": str(self._baseline_built()) if builds_here and timed else None}
        return Request(mode="grade", language=spec.language, directory=str(gdir), entry_point=spec.entry_point,
                       input_builder=spec.input_builder, builder_directory=str(self.baseline_dir),
                       configs=self.configs, seed=seed, device=self.device,
                       outputs=[OutputSlot(o.name, o.arg) for o in spec.outputs],
                       baseline_directory=str(self.baseline_dir) if timed else None,
                       warmup=self.config.warmup, reps=self.config.reps, rounds=self.config.rounds,
                       input_sets=self.config.input_sets, flush_bytes=self.hardware.flush_bytes,
                       tolerances=tolerances, dynamic_check=self._dynamic_check,
                       allowed_torch_ops=list(spec.allowed_torch_ops),
                       backend_file=str(self._backend_file) if self._backend_file is not None else None, **build_dirs)

    def _readonly(self) -> list[Path]:
        """Paths the candidate's sandbox sees read-only besides `HARNESS_FILES`: the pristine baseline, and (compiled
        languages, where the baseline is timed) the baseline's build, which only the trusted build step wrote."""
        return [self.baseline_dir, *([self._baseline_built()] if self.backend.BUILDS and self._timed else []),
                *([self._backend_file] if self._backend_file is not None else [])]

    def _harness_env(self, directory: Path | None = None) -> dict[str, str]:
        """The harness's environment: the interpreter's variables on the CPU; on a GPU, with `directory`, the
        backend's kernel cache in it (``KERNEL_CACHE_DIR``), where the observed run finds what the checked run
        compiled."""
        if self.hardware.interpreter:
            return dict(self.backend.INTERPRETER_ENV or {})
        # Each harness's CPU work (building inputs) is small beside its GPU work; without a cap, torch starts a
        # thread per core in each of N envs' 2-3 processes, which oversubscribes the host's cores N-fold.
        env = {"OMP_NUM_THREADS": str(HARNESS_CPU_THREADS)}
        cache_dir, cache_env = self.backend.KERNEL_CACHE_DIR, self.backend.KERNEL_CACHE_ENV
        if directory is not None and cache_dir is not None and cache_env is not None:
            env[cache_env] = str(directory / cache_dir)
        return env
