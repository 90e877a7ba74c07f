"""The outside observer's side of the `Grader` (observer.py says what is observed and why): the pristine baseline's
observation, the candidate's observed run (started ahead while the agent works, or fresh), and `observe`, which judges
what it saw. A mixin of `Grader`, split out by concern: its methods read the grader's task, hardware, config and
session. Only `Grader.grade` composes the verdict; `observe` returns what stands of the speedups and fills `checks`.
"""
from __future__ import annotations

import collections
import dataclasses
import json
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kernelgym.grader import build as builds
from kernelgym.grader import tracer
from kernelgym.grader.cache import GRADING_CACHE, MAX_CACHE_BYTES, baseline_key
from kernelgym.grader.files import copy_public, copy_regular_files, remove_tree, write_new
from kernelgym.grader.observer import (Observation, ObserverError, cross_check, find_ncu, foreign_kernels, ncu_argv,
                                       parse_report, split)
from kernelgym.grader.protocol import (CHECK_RESULT, OBSERVED_FINISHED_MARKER, OBSERVED_PREFIX, OUTPUTS,
                                       PREPARED_MARKER, REQUEST, Request, check_seed, parse_check_result)
from kernelgym.grader.outcome import FAULT_INFRA
from kernelgym.grader.session import GradingSession
from kernelgym.grader.untrusted import UntrustedFileError, load_json_untrusted, read_untrusted
from kernelgym.grader.worker import HARNESS, HARNESS_FILES
from kernelgym.sandbox import PYTHON, BubblewrapSandbox, Limits, UnsandboxedRunner, gpu_devices, kill_group, make_sandbox

#: Where a compiled candidate's build is copied in its grading directory (the request names it from the start).
BUILD_DIR = ".build"
#: Appended to a withheld speedup where gradings take no turns on the GPU: on a GPU shared by several envs, other
#: work beside the traced checked calls slows the candidate's kernels there (and only there: the baseline's
#: observation is traced with the GPU to itself), so an honest speedup can be withheld.
CONTENTION_HINT = ("if other envs or processes used this GPU at the same time, their work slowed the traced calls: "
                   "GraderConfig(gpu_schedule=True) gives the traced and timed runs of every grading a turn")
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


def _prepared(run: _ObservedRun, deadline: float, cancelled: threading.Event | None = None) -> bool:
    """Wait until the observed run started ahead says it has prepared (`PREPARED_MARKER`; it then idles, no
    candidate code run yet). False where it exited first, `deadline` (monotonic s) passed or `cancelled` was set."""
    while run.proc.poll() is None:  # one that printed the marker and died since serves no more either
        if PREPARED_MARKER in "".join(run.output):
            return True
        if time.monotonic() > deadline or (cancelled and cancelled.is_set()):
            return False
        time.sleep(0.01)
    return False


@dataclass
class ObserverVerdict:
    """What the outside observer decided about one grading (`Observing.observe`); `Grader.grade` applies it."""

    speedups: list[float] | None
    """The per-config speedups that stand (None: withheld, or correctness failed)."""
    refused: bool = False
    """The observer failed the kernel's correctness (foreign kernels, a wrong observed output, a failed run)."""
    withheld: bool = False
    """The speedup is withheld: the profiler's device times do not support it."""
    correct_messages: list[str] = field(default_factory=list)
    perf_messages: list[str] = field(default_factory=list)

    def stands(self, speedups: list[float] | None) -> "ObserverVerdict":
        """This verdict with `speedups` as what stands."""
        self.speedups = speedups
        return self


class StartedObservation:
    """The candidate's observed run started by `Observing.start_observation`, running in a thread of its own. Only
    that thread kills the run (`cancel` asks it to): one process is never killed from two threads."""

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.observation: Observation | None = None
        self.failure: BaseException | None = None  # raised again by `result`
        self.cancelled = threading.Event()

    def result(self) -> Observation | None:
        """The observation, once the thread is done; None where the run ahead could not serve (it died or did not
        prepare before ``go``: no candidate code ran in it), and a fresh run must observe instead.

        Raises:
            ObserverError: the observed run failed (as `Observing._observed_run` raises it).
        """
        self.thread.join()
        if self.failure is not None:
            raise self.failure
        return self.observation

    def cancel(self) -> None:
        """Not needed (an earlier gate failed, or the grading raised): the thread kills the run, before ``go`` where
        it has not gone yet, and ends; waits for it. A no-op once the result was read."""
        self.cancelled.set()
        self.thread.join()


class Observing:
    """The observer's methods of `Grader` (see the module docstring); it holds no state of its own."""

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

    @property
    def traces_checked_run(self) -> bool:
        """Whether each grading's own checked run is its observed run (`GraderConfig.observe_in_checked_run`): under
        the kernel tracer, on a GPU, with every grading observed. Its checked calls are then traced as an observed
        run's are (warm-up calls, markers, the flush buffer) and its timed runs follow untraced: no second process
        imports, prepares and runs the kernel. Not under ncu, which flushes the caches and serializes every kernel
        (the timed runs would be timed under it), and not where `observe_fraction` samples: a checked run that knew
        it was unobserved could cheat there unseen, while a sampled run of its own leaves the checked run unaware."""
        return (self.config.observe_in_checked_run and self.config.observe_fraction >= 1
                and not self.hardware.interpreter and self.observer_unavailable() is None
                and self.observer_tool() == "tracer")

    def observed_in_checked_run(self, session: GradingSession) -> bool:
        """Whether `session`'s grading is observed by its own checked run's trace: it was prepared traced and the
        tracer still observes here (not where it gave way to ncu since, when a run of its own observes instead)."""
        return session.traced and self.observer_tool() == "tracer"

    def _tracer_readonly(self) -> list[Path]:
        """What a traced checked run's sandbox binds read-only for the tracer: its library (none otherwise)."""
        return [self._tracer_library] if self.traces_checked_run else []

    def _tracer_env(self, directory: Path | None) -> dict[str, str]:
        """A traced checked run's tracer variables (`tracer.env`, deferred: recording starts at the harness's first
        marker), its trace written into the grading directory `directory`; none otherwise."""
        return tracer.env(self._tracer_library, directory, deferred=True) if directory and self.traces_checked_run else {}

    def _observer_name(self) -> str:
        return "the CUPTI kernel tracer" if self._tool == "tracer" else "Nsight Compute"

    def _prepare_observer(self, session: GradingSession, observed: bool, token: object,
                          spawned: "_ObservedRun | None" = None) -> None:
        """In the background, one profiler at a time (two profiling at once conflict; seen on the H200): observe the
        baseline unless that is done, then start the candidate's observed run ahead where this grading is observed
        (the one `spawn` started, given its request now, where it still runs)."""
        try:
            self.baseline_observation()
        except ObserverError:
            pass  # said in the grade, where it matters
        with self._ahead_lock:
            given_up = self._ahead_token is not token  # the grading was given up meanwhile (`stop_observer`)
        if given_up or not observed or session.traced:  # traced: the checked run observes itself
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

    def _wait_for_observer(self, timeout_s: float = 120.0) -> None:
        """Wait until the observer's background work is done (the baseline's observation, whose device times are
        cached for every later cross-check, so nothing of this grading's may run beside it) and, under Nsight Compute,
        until the observed run started ahead has prepared (it then idles): ncu flushes the caches before every kernel,
        which must not overlap the candidate's timed runs. The kernel tracer's run prepares beside them (its CUDA
        start, inputs and first kernel, as other envs' runs do on a shared GPU), off the submit's path. A run that
        does not prepare in `timeout_s` is given up (the grading observes with a fresh run later)."""
        if self._observer_thread is not None:
            self._observer_thread.join()
        if self._tool == "tracer":
            return
        ahead = self._observing
        if ahead is not None and not _prepared(ahead, time.monotonic() + timeout_s):
            self.stop_observer()

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
            for directory in (ahead.source, ahead.results):  # its folders, made for it alone
                remove_tree(directory)

    def start_observation(self, session: GradingSession, sources: dict[str, str], passed_so_far: bool,
                          checks: dict[str, str]) -> "StartedObservation | None":
        """Start the candidate's observed run now, in a thread, where one was started ahead for this grading and is
        alive: it then runs while the parent compares the checked outputs (`Grader.grade` calls this once the
        candidate's process has ended). Not where `passed_so_far` is False (the compile gate or the static check
        refused the kernel), the grading is not observed (`checks`' ``observer`` is not pending) or its disk check
        failed: a refused kernel's files are never copied for an observation. Returns None then, and where no run
        waits ahead (`observe` runs a fresh one itself, at the end, where it is needed)."""
        if (not passed_so_far or checks.get("observer") != "pending" or checks.get("disk", "").startswith("failed")
                or session.traced):
            return None
        if self.observer_unavailable() is not None:
            return None
        with self._ahead_lock:
            ahead = self._observing
        if ahead is None or ahead.gdir != session.gdir or ahead.proc.poll() is not None:
            return None
        started = StartedObservation()

        def run() -> None:
            try:
                started.observation = self._observed_run(session, sources, started)
            except BaseException as e:  # noqa: BLE001 - raised again in the grading's thread by `result`
                started.failure = e

        started.thread = threading.Thread(target=run, name="observed-run", daemon=True)
        started.thread.start()
        return started

    def observe(self, session: GradingSession, sources: dict[str, str], rows: list[dict],
                speedups: list[float] | None, checks: dict[str, str],
                started: "StartedObservation | None" = None) -> ObserverVerdict:
        """Run the candidate's check once more under the profiler (or take the run `start_observation` started) and
        judge what it saw: a config whose calls ran a kernel that is neither the candidate's own nor allowed, or
        whose observed output is wrong, fails correctness (its row says why); a speedup the observed device times do
        not support is withheld. Updates `checks` and the rows; returns the verdict, which `Grader.grade` applies to
        the stages."""
        v = ObserverVerdict(speedups=speedups)
        unavailable = self.observer_unavailable()
        if unavailable:  # observer='required'
            checks["observer"] = checks["speedup_cross_check"] = f"failed: required, but {unavailable}"
            v.refused = True
            v.correct_messages.append(f"outside observer required, but {unavailable}")
            return v.stands(None)
        own = self.backend.own_kernel_names(sources)
        traced = self.observed_in_checked_run(session)
        try:
            observation = started.result() if started is not None else None
            if traced:
                observation = self._traced_observation(session)
            elif observation is None:  # not started beside the comparisons, or its run ahead could not serve; or
                # traced, but the tracer gave way to ncu since (CUPTI refused the baseline): a run of its own then
                observation = self._observed_run(session, sources)
        except ObserverError as e:
            try:  # where the pristine baseline cannot be observed either, the machine is at fault, not the kernel
                self.baseline_observation()
            except ObserverError as machine:
                checks["observer"] = checks["speedup_cross_check"] = f"unavailable: {machine}"
                v.correct_messages.append(f"outside observer unavailable: {machine}")
                return v
            if e.before_candidate:  # not passed unobserved either: another env's kernel could have caused it
                session.fault = FAULT_INFRA
                e = ObserverError(f"the observed run died before any candidate code ran (the machine's fault, an "
                                  f"infrastructure fault: retry or drop this grading): {e}")
            checks["observer"] = checks["speedup_cross_check"] = f"failed: {e}"
            v.refused = True
            v.correct_messages.append(f"outside observer: {e}")
            return v.stands(None)
        failed = []
        bare = self.backend.BARE_KERNEL_NAMES
        for i, (row, foreign) in enumerate(zip(rows, foreign_kernels(observation, own, bare))):
            # A traced checked run's outputs are the checked ones, compared already.
            ok, msg, _ = (True, "", None) if traced else session.compared(self._observed_outputs, i,
                                                                          check_seed(session.seed, i))
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
            v.refused = True
            v.correct_messages += [f"outside observer ({self._observer_name()}): every kernel of each checked call must be the "
                                 "candidate's own (or a fill or copy):", *failed[:10]]
            return v.stands(None)
        checks["observer"] = "passed"
        v.correct_messages.append(f"outside observer ({self._observer_name()}): only the candidate's own kernels "
                                f"({', '.join(sorted(own)) or 'none found'}) and allowed fills/copies ran")
        if not speedups:
            checks["speedup_cross_check"] = "not run: no speedup measured"
            return v
        try:
            baseline = self.baseline_observation()
        except ObserverError as e:
            checks["speedup_cross_check"] = f"unavailable: the baseline could not be observed: {e}"
            v.perf_messages.append(f"speedup not cross-checked: the baseline could not be observed: {e}")
            return v
        refused = []
        for i, row in enumerate(rows):
            row["observed_baseline_ms"] = baseline.checked_ms(i)
            why = cross_check(row["speedup"], row["observed_baseline_ms"], row["observed_ms"], self.config.observer_margin)
            if why:
                refused.append(f"{row['config']}: {why}")
        if refused:
            checks["speedup_cross_check"] = "failed"
            v.withheld = True
            v.perf_messages += ["speedup withheld: the profiler's device times do not support it", *refused]
            if not self.config.gpu_schedule:
                v.perf_messages.append(CONTENTION_HINT)
            return v.stands(None)
        checks["speedup_cross_check"] = "passed"
        return v

    def _traced_observation(self, session: GradingSession) -> Observation:
        """What the kernel tracer saw of the grading's own checked run (`traces_checked_run`): its trace in the grading
        directory, cut at the harness's markers. Read once the run's process is gone.

        Raises:
            ObserverError: no trace, or traces of more than one process; an incomplete or damaged one, or markers
                missing (`tracer.parse_trace`, `observer.split`).
        """
        try:
            kernels = tracer.parse_trace(session.gdir, lambda path: read_untrusted(path, MAX_TRACE_BYTES))
        except UntrustedFileError as e:  # a trace past MAX_TRACE_BYTES (millions of kernels), or not a regular file
            raise ObserverError(f"the checked run's trace is unreadable: {e}") from None
        session.observer_ahead = "traced in the checked run"
        if not kernels:
            # Not even the harness's first marker, launched before any candidate code, was recorded: CUPTI did not
            # start recording (the harness stops where it cannot, so this is not expected): the machine's fault.
            raise ObserverError("the kernel tracer recorded nothing, not even the harness's first marker",
                                before_candidate=True)
        return split(kernels, len(self.configs), flushed=True)

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
        """The key of this grader's baseline entries in the grading cache (cache.py); computed once per observer tool
        and configs."""
        tool = self.observer_tool()
        # Per tool and configs: unseen evaluation grades one config at a time with the same grader.
        marker = (tool, json.dumps(self.configs, sort_keys=True, default=str))
        if self._key is None or self._key[0] != marker:
            self._key = (marker, baseline_key(self.task.root, self.hardware.id, self.configs, self.config.sandbox, tool))
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
        """Fill the new grading directory `gdir`'s Triton cache from the kept copy, if any and if it holds none yet (its
        group files moved to point there): the harness then finds the baseline's kernels compiled. What the candidate
        later does to these files touches only its own grading."""
        cache_dir = self.backend.KERNEL_CACHE_DIR
        if self.hardware.interpreter or cache_dir is None:
            return
        if (gdir / cache_dir).is_dir() and any((gdir / cache_dir).iterdir()):
            return  # seeded already (a directory spawned ahead is seeded again when its grading is prepared)
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
        return dataclasses.replace(self._request(directory, seed, timed=False), mode="check", observe=True, traced=False,
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

    def _observed_run(self, session: GradingSession, sources: dict[str, str],
                      started: "StartedObservation | None" = None) -> Observation | None:
        """The candidate's observed run: the run started ahead for this grading (`start_worker`) where there is one
        still waiting and it prepares, else a fresh one. Either way it imports `sources`, the editable files as read
        before any candidate code ran (a file the candidate rewrote while checked is not what it observes), and for a
        compiled language the trusted build step's output. From a `started` thread only the run ahead serves: where
        it cannot, None (the grading's thread runs a fresh one where needed); `started.cancelled` stops it.

        Raises:
            ObserverError: the run timed out, failed, or its report is missing or incomplete.
        """
        if self._observer_thread is not None:
            self._observer_thread.join()  # the observed run started ahead may still be starting
        with self._ahead_lock:
            self._ahead_token, ahead, self._observing = None, self._observing, None
        # The used run's own line follows its exit; a thread's word on why its run ahead could not serve stays.
        session.observer_ahead = session.observer_ahead or "none started"
        cancelled = started.cancelled if started is not None else None
        # Under the tracer the candidate ran while this run prepared: it must have prepared before "go", or it serves
        # no more (a death while preparing, an out-of-memory beside other envs, is the machine's, not the kernel's).
        if ahead is not None and (ahead.gdir != session.gdir or
                                  not _prepared(ahead, time.monotonic() + self.timeout_s, cancelled)):
            code = ahead.proc.poll()
            kill_group(ahead.proc)  # prepared for another grading, or died before go: no candidate code ran in it
            session.observed_dirs += [ahead.source, ahead.results]
            session.observer_ahead = ("prepared for another grading" if ahead.gdir != session.gdir else
                                      "cancelled" if cancelled and cancelled.is_set() else
                                      f"did not prepare in {self.timeout_s:.0f} s" if code is None else
                                      f"exited with code {code} before go: {''.join(ahead.output)[-1500:]}")
            ahead = None
        if started is not None and ahead is None:
            return None  # the grading's own thread runs a fresh one, where it still needs an observation
        source, results = (ahead.source, ahead.results) if ahead else (self._observer_source(), self._observer_dir())
        session.observed_dirs += [source, results]  # removed once the grade is read
        try:
            return self._observe_in(session, sources, ahead, source, results, cancelled)
        except BaseException:
            if ahead is not None:  # taken from `_observing`: nothing else would end it
                kill_group(ahead.proc)
            raise

    def _observe_in(self, session: GradingSession, sources: dict[str, str], ahead: "_ObservedRun | None",
                    source: Path, results: Path, cancelled: threading.Event | None) -> Observation:
        """`_observed_run`'s second half: write `sources` and the kernel cache into the observed run's directories
        (`source`, `results`), then run it (`ahead`, or a fresh one) and read what it saw."""
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
                if cancelled is not None and cancelled.is_set():
                    went = None
                    raise OSError("cancelled before go")
                ahead.proc.stdin.write("go\n")
                ahead.proc.stdin.close()
                finished = self._wait_observed(ahead, cancelled)
            except subprocess.TimeoutExpired:
                timed_out, finished = True, False
            except OSError:
                finished = False  # it died meanwhile: its exit code and output say how
            finally:
                kill_group(ahead.proc)
            # Ended by us once it said it finished (the tracer's trace is flushed by then): that is a clean exit.
            code, output = 0 if finished else ahead.proc.returncode, "".join(ahead.output)
            session.observer_ahead = ("cancelled before go" if went is None else
                                      f"used: go to {'finished' if finished else 'exit'} {time.monotonic() - went:.2f} s")
        self._observed_outputs = results / (OBSERVED_PREFIX + OUTPUTS)
        session.observer_log = output[-4000:]  # the observed run's harness log (phases), for diagnosis
        return self._read_observation(results, timed_out, code, output, prepared=ahead is not None)

    def _wait_observed(self, ahead: "_ObservedRun", cancelled: threading.Event | None = None) -> bool:
        """Wait for the observed run started ahead to exit or, under the kernel tracer, to say it has finished
        (`OBSERVED_FINISHED_MARKER`: its results and trace are written; the caller then ends its sandbox, which saves
        CUDA's teardown), or for `cancelled`. Returns whether it said so. Under ncu, which writes its report at exit,
        it waits for the exit.

        Raises:
            subprocess.TimeoutExpired: neither within the grader's limit.
        """
        deadline = time.monotonic() + self.timeout_s
        while ahead.proc.poll() is None:
            if self._tool == "tracer" and OBSERVED_FINISHED_MARKER in "".join(list(ahead.output)[-8:]):
                return True
            if cancelled is not None and cancelled.is_set():
                return False
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(ahead.proc.args, self.timeout_s)
            time.sleep(0.005)
        return False

    def _read_observation(self, results: Path, timed_out: bool, code: int, output: str,
                          prepared: bool = False) -> Observation:
        """The observed run's result and the profiler's report in `results`, read once its sandbox is gone.
        `prepared`: it said it had prepared before "go" (a run started ahead: its output is only the last lines,
        which the candidate can fill); else its output's head tells (a fresh run's first bytes are the harness's).

        Raises:
            ObserverError: the run timed out or failed, or its report is missing or incomplete.
        """
        if timed_out:
            raise ObserverError(f"the observed run passed the {self.timeout_s:.0f} s limit")
        early = not prepared and PREPARED_MARKER not in output  # it died preparing: no candidate code ran in it
        try:
            check = parse_check_result(load_json_untrusted(results / (OBSERVED_PREFIX + CHECK_RESULT)),
                                       len(self.configs))
            if self._tool == "tracer":
                kernels = tracer.parse_trace(results, lambda path: read_untrusted(path, MAX_TRACE_BYTES))
            else:
                kernels = parse_report(read_untrusted(results / "ncu.csv", 64 << 20).decode(errors="replace"))
        except UntrustedFileError as e:
            raise ObserverError(f"the observed run left no result ({e}); exit code {code}:\n"
                                f"{output[-1500:]}", before_candidate=early) from None
        if code != 0:
            raise ObserverError(f"the profiler exited with code {code}:\n{output[-1500:]}", before_candidate=early)
        if not check.ok or len(check.configs) != len(self.configs) or not all(c.ok for c in check.configs):
            errors = [c.error for c in check.configs if not c.ok] or [check.error]
            raise ObserverError(f"the check failed in the observed run: {str(errors[0])[-1500:]}")
        return split(kernels, len(self.configs), flushed=self._tool == "tracer")
