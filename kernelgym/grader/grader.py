"""The trusted grader. `Grader.grade` reads top-down: compile -> correctness -> performance -> score.

Trust boundary: only the task's editable files are copied out of the workspace (symlinks refused) into a fresh
grading directory, beside pristine copies of the task's other public files (files.py). For a compiled language the
compile gate builds the sources first, in a sandbox of its own where no candidate code runs (build.py). The
candidate then runs in its own process inside the sandbox (harness.py; the protocol both sides share is
protocol.py), so a crash or an out-of-bounds write cannot take the env down, and it cannot read private data.
Correctness is decided here, in the parent, against references computed by trusted code from the pristine task
directory on the same seeded inputs (reference.py): a candidate that patches its own process cannot make a wrong
answer pass. The state of one grading lives in its `GradingSession` (session.py).

What decides a grade, one file each: the gates (gates.py: compile, correctness, performance), the outside observer
(observing.py, observer.py, tracer.py), the outcome (outcome.py) and the score (score.py); this file composes them,
in `Grader.grade` alone. Latency: one seam, the runner (runner.py), hides the fast path (a warm worker that prepared
the grading while the agent worked, worker.py and preparing.py; outputs compared while the harness still runs,
session.compare_early). The plain path (a fresh process, comparisons at the end) gives the same verdicts
(tests/test_fast_path.py).
"""

from __future__ import annotations

import functools
import math
import statistics
import threading
import time
from pathlib import Path

from kernelgym.backends import BACKENDS_DIR, backend_path, get_backend
from kernelgym.errors import TaskSpecError
from kernelgym.grader import build as builds
from kernelgym.grader import checks as grade_checks
from kernelgym.grader import gpu_schedule
from kernelgym.grader import outcome
from kernelgym.grader.files import (MAX_EDITABLE_BYTES, copy_candidate, copy_editable, prune_grading_dir, remove_tree,
                                    tree_usage)
from kernelgym.grader.gates import PEAK_KEY, compile_gate, correctness_gate, performance_gate  # noqa: F401 - PEAK_KEY re-exported
from kernelgym.grader.grade import NOT_MEASURED_ON_INTERPRETER, Grade, GraderConfig, Stage  # noqa: F401 - re-exported
from kernelgym.grader.observing import BUILD_DIR, MAX_TRACE_BYTES, Observing, _ObservedRun  # noqa: F401 - re-exported
from kernelgym.grader.preparing import Preparing, _Spare
from kernelgym.grader.protocol import CheckResult, OutputSlot, Request, TimeResult, parse_check_result, parse_time_result
from kernelgym.grader.runner import FreshRunner, WarmRunner
from kernelgym.grader.score import arena_score
from kernelgym.grader.session import GradingSession
from kernelgym.grader.static_check import StaticCheck, run_static_check
from kernelgym.grader.untrusted import read_untrusted
from kernelgym.grader.worker import HARNESS_FILES, GraderWorker
from kernelgym.hardware import HardwareProfile
from kernelgym.launch_options import unsupported_launch_options
from kernelgym.sandbox import make_sandbox
from kernelgym.task import Task

#: The derived limit of one harness process (`GraderConfig.timeout_s` None): compiling and importing, plus per config
#: (one check call, warm-up and 2 x reps timed runs, the comparisons; the CPU interpreter is far slower), at least
#: the floor. A compiled language's build has a limit of its own (`BUILD_TIMEOUT_S`).
TIMEOUT_FLOOR_S = 120.0
COMPILE_BUDGET_S = 60.0
PER_CONFIG_S = {"gpu": 30.0, "interpreter": 60.0}
BUILD_TIMEOUT_S = 900.0

class Grader(Preparing, Observing):
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
        self._key: tuple[tuple[str, str], str] | None = None  # ((observer tool, configs), baseline key): _baseline_key
        self._spare: _Spare | None = None  # see spawn

    @property
    def timeout_s(self) -> float:
        """The limit of one harness process, s: `GraderConfig.timeout_s`, or derived from the configs graded
        (`COMPILE_BUDGET_S` + `PER_CONFIG_S` per config, at least `TIMEOUT_FLOOR_S`)."""
        # A process that waits its turn on the GPU's schedule (a candidate elsewhere may hold it) gets that wait on
        # top: the wait must not eat the time a correct kernel needs.
        wait = self.config.gpu_wait_s * (2 if self.traces_checked_run else 1) if self._gpu_lock else 0.0  # 2 turns
        if self.config.timeout_s is not None:
            return self.config.timeout_s + wait
        per = PER_CONFIG_S["interpreter" if self.hardware.interpreter else "gpu"]
        return max(TIMEOUT_FLOOR_S, COMPILE_BUDGET_S + per * max(len(self.configs), 1)) + wait

    @property
    def _static_check_on(self) -> bool:
        """Whether the static provenance check judges the sources: `GraderConfig.static_check` and the backend's
        ``STATIC_CHECK``."""
        return self.config.static_check and self.backend.STATIC_CHECK

    @property
    def _timed(self) -> bool:
        """Whether gradings time the candidate against the baseline (a GPU, and `GraderConfig.measure`)."""
        return not self.hardware.interpreter and self.config.measure

    def grade(self, workspace: Path, seed: int) -> Grade:
        """Grade the editable files in `workspace`. Never raises for a bad kernel: failures are stages.

        Raises:
            TaskSpecError: the task itself is broken (its reference fails, or a trivial output passes it).
        """
        start = time.monotonic()
        session = self.session = self._session_for(seed)
        copied = copy_editable(self.task, Path(workspace).resolve(), session.gdir)  # problems copying, if any
        # Read before any candidate code runs: afterwards the files may be links to anything (/proc/self/mem).
        raw = {} if copied else self._editable_bytes(session.gdir)
        sources = {rel: data.decode(errors="replace") for rel, data in raw.items()}
        static_ran = self._static_check_on and bool(raw)
        static = self.static_check(raw) if static_ran else StaticCheck()
        problems = [*copied, *static.compile_problems]  # unreadable sources, or no verdict: compile fails
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
        checks = grade_checks.planned(self, provenance or static.compile_problems, static_ran)
        # Bytes and entries in one walk: 300,000 empty files take a few MiB and every inode of the host's disk.
        used = tree_usage(session.gdir, self.config.grading_dir_cap_bytes, self.config.grading_dir_cap_files)
        checks["disk"] = grade_checks.disk_check(used, self.config)
        compile_stage = compile_gate(problems, check, session, provenance)
        correct_stage, rows = Stage("correctness", None), [{"config": c} for c in self.configs]
        perf_stage, speedups, compared_ok, timed_ok = Stage("performance", None), None, None, None
        # The observed run goes now, beside the comparisons, unless a verdict so far refuses the kernel; it is
        # cancelled (killed) unless its verdict is read below.
        started = self.start_observation(session, sources, compile_stage.passed and not provenance, checks)
        try:
            if compile_stage.passed:
                correct_stage, rows = correctness_gate(session, check, self.configs, provenance, self.provenance_note())
                compared_ok = correct_stage.passed
                # The harness ran it whatever the static check found: both verdicts are reported.
                if checks["dynamic_check"] == "pending" and check.configs:
                    checks["dynamic_check"] = ("failed" if any(c.dynamic_check_failed for c in check.configs)
                                               else "passed")
                checks["launch_counter"] = grade_checks.launch_verdict(checks["launch_counter"], check)
                if checks["disk"].startswith("failed"):
                    correct_stage.passed = False
                    correct_stage.messages.append(checks["disk"])
            if correct_stage.passed:
                perf_stage, speedups, timed_ok = performance_gate(session, rows, timed, self.config, self.hardware,
                                                                 self.task.spec.roofline)
                if not timed_ok:
                    correct_stage.passed = False
                    correct_stage.messages.append("the output of the timed runs was wrong (see performance)")
            phases["compare"] = time.monotonic() - harness_done
            if correct_stage.passed and checks["observer"] == "pending":
                observed = time.monotonic()
                verdict = self.observe(session, sources, rows, speedups, checks, started)
                correct_stage.passed = correct_stage.passed and not verdict.refused
                perf_stage.passed = False if verdict.withheld else perf_stage.passed
                correct_stage.messages += verdict.correct_messages
                perf_stage.messages += verdict.perf_messages
                speedups = verdict.speedups
                phases["observer"] = time.monotonic() - observed
        finally:
            if started is not None:
                started.cancel()  # a no-op once its verdict was read
            self.stop_observer()  # an observed run started ahead and not needed (an earlier gate failed)
        for name, state in checks.items():
            if state == "pending":
                checks[name] = "not run: an earlier gate failed"
        checks = grade_checks.grade_checks(
            self, session, copy_problems=copied,
            static=static if static_ran else None, check=check, compared_ok=compared_ok, timed=timed,
            timed_ok=timed_ok, stages=[compile_stage, correct_stage, perf_stage], rows=rows, summary=checks, used=used)
        if not self.config.keep_grading_dirs:  # the grade is read: outputs, caches and builds go, logs stay
            prune_grading_dir(session.gdir)
            for directory in session.observed_dirs:
                remove_tree(directory)
        mean = statistics.fmean(speedups) if speedups else None
        geo = math.exp(statistics.fmean(math.log(s) for s in speedups)) if speedups else None
        score = (0.0 if session.fault == outcome.FAULT_INFRA  # the machine failed: nothing to score (retry or drop)
                 else arena_score(bool(compile_stage.passed), bool(correct_stage.passed), mean))
        return Grade(task=self.task.env_id, hardware=self.hardware.id, interpreter=self.hardware.interpreter,
                     stages=[compile_stage, correct_stage, perf_stage], configs=rows, speedup=mean,
                     speedup_geomean=geo, score=score, elapsed_s=time.monotonic() - start, phases_s=phases,
                     checks=checks,
                     outcome=outcome.decide(compiled=compile_stage.passed, correct=correct_stage.passed,
                                            performance=perf_stage.passed, configs=rows, checks=checks,
                                            fault=session.fault))

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

    @property
    def _dynamic_check(self) -> bool:
        """Whether the harness runs the dynamic check (`GraderConfig.dynamic_check`): asked for, and no outside
        observer on this machine."""
        return self.config.dynamic_check and self.observer_unavailable() is not None

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
        if session.references.device != "cpu":
            # References and comparisons on the GPU: done before the candidate runs and after it ended, never while
            # its kernels are timed (the trusted side's kernels would run between the timed ones).
            session.references.wait()
        elif self.config.early_compare:
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

    def _run_harness(self, gdir: Path, seed: int) -> tuple[dict, dict | None]:
        """Run harness.py on `gdir` through this grading's runner (runner.py): the warm worker's `WarmRunner` when one
        is up, else a `FreshRunner`. Returns the raw (check, timing or None) results (untrusted; `_run_candidate` parses
        them); failures are results, not raises. A fault outside the gates (timeout, infrastructure) goes to the session."""
        def fresh() -> FreshRunner:
            return FreshRunner(self._request(gdir, seed, self._timed),
                               make_sandbox(self.config.sandbox, gdir, readonly=[*HARNESS_FILES, *self._readonly()],
                                            gpu=not self.hardware.interpreter, env=self._harness_env(gdir)),
                               self.timeout_s, self._timed, kill_others=self.config.sandbox == "bwrap")

        runner: FreshRunner | WarmRunner
        if self.worker is None or not self.worker.alive():
            runner = fresh()
        else:
            asked = time.monotonic()

            def started() -> None:
                if self.session is not None:
                    self.session.prepare_wait_s = time.monotonic() - asked
                self._keep_kernel_cache(gdir)

            runner = WarmRunner(self.worker, fresh, self.timeout_s, self._timed, started,
                                stop_after=not self.keep_worker)
            if not self.keep_worker:
                self.worker = None
        run = runner.run(gdir)
        if self.session is not None:
            self.session.fault, self.session.result_written = run.fault, run.result_written
        return run.check, run.timed

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
                       timed_ms_per_config=self.config.timed_ms_per_config,
                       input_sets=self.config.input_sets, flush_bytes=self.hardware.flush_bytes,
                       tolerances=tolerances, dynamic_check=self._dynamic_check,
                       allowed_torch_ops=list(spec.allowed_torch_ops),
                       backend_file=str(self._backend_file) if self._backend_file is not None else None,
                       **gpu_schedule.request_fields(self._gpu_lock, self.config),
                       traced=self.traces_checked_run, observer_tool="tracer" if self.traces_checked_run else "ncu",
                       **build_dirs)

    def _readonly(self) -> list[Path]:
        """Paths the candidate's sandbox sees read-only besides `HARNESS_FILES`: the pristine baseline, and (compiled
        languages, where the baseline is timed) the baseline's build, which only the trusted build step wrote; a traced
        checked run's tracer."""
        return [self.baseline_dir, *([self._baseline_built()] if self.backend.BUILDS and self._timed else []),
                *([self._backend_file] if self._backend_file is not None else []),
                *gpu_schedule.turn_files(self._gpu_lock), *self._tracer_readonly()]

    @functools.cached_property
    def _gpu_lock(self) -> Path | None:
        """This GPU's timing schedule (gpu_schedule.py), where `GraderConfig.gpu_schedule` asks for it and a GPU
        grades; None otherwise (nothing is timed on the CPU interpreter)."""
        return gpu_schedule.scheduled_lock(self.config, self.hardware)

    def _harness_env(self, directory: Path | None = None) -> dict[str, str]:
        """The harness's environment: the interpreter's variables on the CPU; on a GPU, with `directory`, the
        backend's kernel cache in it (``KERNEL_CACHE_DIR``), where the observed run finds what the checked run
        compiled, and a traced checked run's tracer writing its trace there."""
        if self.hardware.interpreter:
            return dict(self.backend.INTERPRETER_ENV or {})
        # Each harness's CPU work (building inputs) is small beside its GPU work; without a cap, torch starts a
        # thread per core in each of N envs' 2-3 processes, which oversubscribes the host's cores N-fold.
        env = {"OMP_NUM_THREADS": str(self.config.harness_cpu_threads), **self._tracer_env(directory)}
        cache_dir, cache_env = self.backend.KERNEL_CACHE_DIR, self.backend.KERNEL_CACHE_ENV
        if directory is not None and cache_dir is not None and cache_env is not None:
            env[cache_env] = str(directory / cache_dir)
        return env
