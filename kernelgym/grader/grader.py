"""The trusted grader. Reads top-down: `compile` -> `check_correctness` -> `measure_performance` -> score.

Trust boundary: only the task's editable files are copied out of the workspace (symlinks refused) into
a fresh grading directory, beside pristine copies of the task's other public files. The candidate runs
in its own process inside the sandbox (`harness.py`), so a crash or an out-of-bounds write cannot take
the env down, and it cannot read private data. Correctness is decided here, in the parent, against a
reference computed here from the pristine task directory on the same seeded inputs: a candidate that
patches its own process cannot make a wrong answer pass.
"""
from __future__ import annotations

import json
import math
import os
import statistics
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelgym.grader.compare import PreparedReference, compare_outputs, prepare_reference
from kernelgym.grader.reference import load_reference
from kernelgym.grader.score import arena_score
from kernelgym.grader.timing_stats import TimingError, choose_runs, summarize
from kernelgym.grader.untrusted import UntrustedFileError, load_json_untrusted, load_tensors_untrusted, read_untrusted
from kernelgym.grader.worker import GraderWorker
from kernelgym.hardware import HardwareProfile
from kernelgym.launch_options import unsupported_launch_options
from kernelgym.roofline import achieved, evaluate
from kernelgym.sandbox import PYTHON, Limits, make_sandbox
from kernelgym.task import Task

HARNESS = Path(__file__).resolve().parent / "harness.py"
IMPORTED_MARKER = "[harness] candidate imported"  # printed by harness.py once the candidate module imported
PREPARED_MARKER = "[harness] prepared"  # printed by harness.py before it reads the candidate
MAX_EDITABLE_BYTES = 4 << 20  # an editable file (kernel source) larger than this is refused
#: Config dtype names (torch's) to the keys of a hardware profile's `peak_tflops`.
PEAK_KEY = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}

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
    timeout_s: float = 900.0
    """Limit for one harness process (check or time)."""
    sandbox: str = "bwrap"
    """Sandbox backend for the candidate: 'bwrap' or 'none' (explicit opt-out)."""
    measure: bool = True
    """Run the performance stage (False: correctness only, e.g. the original kernel on unseen configs)."""
    warm_worker: bool = True
    """Start a warm grading worker at reset and prepare the episode's grading in it while the agent works (CUDA
    start, inputs, the baseline's graphs, the references; see worker.py): submit-to-reward then pays only for
    running the candidate. False: each grading starts a fresh sandboxed process."""


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
    """Where `elapsed_s` went: ``harness`` (the candidate's process: import, check, timing) and ``compare``
    (the parent's checks of its outputs against the reference)."""

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


def verify_seed(seed: int, index: int) -> int:
    """Seed of the inputs on which the timed path's output is verified (never the correctness inputs)."""
    return seed + 1000 + index


def timed_output_path(gdir: Path, index: int) -> Path:
    """Where the harness saves the timed path's output of config `index` (one file per config)."""
    return gdir / f"timed_output-{index}.pt"


def copy_candidate(task: Task, workspace: Path, dest: Path) -> list[str]:
    """Build a grading directory: the editable files from `workspace`, every other public file pristine
    from the task. Returns problems (empty when fine); a symlink or a missing editable file is one."""
    copy_public(task, dest)
    return copy_editable(task, workspace, dest)


def copy_public(task: Task, dest: Path) -> None:
    """Copy the task's public files that are not editable, pristine, into `dest` (the input builder among them)."""
    for rel in task.public_files():
        if str(rel) not in task.spec.editable_files:
            _write_new(dest / rel, (task.root / rel).read_bytes())


def copy_editable(task: Task, workspace: Path, dest: Path) -> list[str]:
    """Copy the editable files from `workspace` into `dest`. Returns problems: a symlink, a missing or unreadable
    file, or one over `MAX_EDITABLE_BYTES`."""
    problems = []
    root = os.path.realpath(workspace)
    for rel in task.spec.editable_files:
        src = workspace / rel
        # Blocks a symlink to private data or to the grader itself being copied in as the "kernel", also through a
        # symlinked directory on the way (only the last component is opened with O_NOFOLLOW).
        if os.path.realpath(src.parent) != os.path.normpath(os.path.join(root, os.path.dirname(rel))):
            problems.append(f"{rel}: a directory on its path is a symlink in the workspace; it must be a real one")
            continue
        if src.is_symlink() or not src.is_file():
            problems.append(f"{rel}: {'is a symlink' if src.is_symlink() else 'missing'} in the workspace; "
                            f"it must be a regular file")
            continue
        try:
            _write_new(dest / rel, read_untrusted(src, MAX_EDITABLE_BYTES))
        except UntrustedFileError as e:
            problems.append(f"{rel}: {e}")
    return problems


def _text(value: Any, limit: int = 6000) -> str:
    """A candidate-reported value as a message: a string, cut to its last `limit` characters (nested JSON from a
    candidate must not reach the grade as a structure)."""
    return str(value)[-limit:]


def _identity(path: Path) -> tuple[int, int, int, int] | None:
    """(device, inode, size, ctime in ns) of `path` itself (a link is not followed), or None where it is absent: a
    file replaced by rename, or written again in place, gets another identity (ctime cannot be set by a process,
    unlike mtime)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns


def _write_new(path: Path, data: bytes) -> None:
    # O_EXCL | O_NOFOLLOW: never write through anything already at the path (a planted symlink).
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


class Grader:
    """Grades the kernel in a workspace for one task on one hardware profile.

    Args:
        task: the task.
        hardware: the hardware profile; `interpreter` profiles skip timing.
        work_dir: where grading directories are made (outside every workspace).
        config: `GraderConfig`.
        configs: the configs to grade on (default: the task's seen configs for this hardware).
    """

    def __init__(self, task: Task, hardware: HardwareProfile, work_dir: Path, config: GraderConfig | None = None,
                 configs: list[dict] | None = None):
        self.task, self.hardware, self.config = task, hardware, config or GraderConfig()
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

    def start_worker(self, seed: int | None = None) -> None:
        """Start a warm worker (see worker.py). With `seed`, also prepare the grading of that seed while the agent
        works: the next `grade(workspace, seed)` then only imports and runs the candidate (harness.prepare: CUDA
        start, inputs, the baseline's compilation and graphs; here: the reference outputs). The worker's sandbox
        then binds only that grading's directory, which the candidate therefore cannot rename or replace.

        Without `seed` the worker may write anywhere under `work_dir`: it serves only `keep_worker` gradings,
        which are of trusted code (the pristine original on unseen configs); `grade` uses it for nothing else."""
        self.stop_worker()
        self._prepared = None
        gdir = self._new_grading_dir(seed) if seed is not None else None
        self.worker = GraderWorker(gdir or self.work_dir, [self.baseline_dir], self.config.sandbox,
                                   gpu=not self.hardware.interpreter, env=self._harness_env(),
                                   one_run=not self.keep_worker)
        if gdir is not None:
            self.worker.prepare(gdir / "request.json")
            self._start_references(seed)
            self._prepared = (gdir, seed)

    def stop_worker(self) -> None:
        """Kill the warm worker, if any (and with it any grading it is running)."""
        if self.worker is not None:
            self.worker.stop()
            self.worker = None

    # -- the gates -------------------------------------------------------------------------------
    def grade(self, workspace: Path, seed: int) -> Grade:
        """Grade the editable files in `workspace`. Never raises for a bad kernel: failures are stages."""
        start = time.monotonic()
        prepared, self._prepared = getattr(self, "_prepared", None), None
        if prepared is not None and prepared[1] == seed and self.worker is not None and self.worker.alive():
            gdir = prepared[0]  # prepared by start_worker: public files, request, references under way
        else:
            if not self.keep_worker:
                self.stop_worker()  # prepared for another seed, or not prepared: a fresh process grades
            gdir = self._new_grading_dir(seed)
            self._start_references(seed)  # computed in the background while the candidate runs
        problems = copy_editable(self.task, Path(workspace).resolve(), gdir)
        self.launch_notes = [n for rel in self.task.spec.editable_files if (gdir / rel).is_file()
                             for n in unsupported_launch_options((gdir / rel).read_text(errors="replace"), self.hardware)]
        self._compares: dict[tuple[Path, int], tuple[tuple[bool, str, float | None], tuple | None]] = {}
        self._compare_lock, self._file_locks, self._files = threading.Lock(), {}, {}
        self._grading_start, self.compare_log = start, []
        check, timed = (None, None) if problems else self._run_harness_comparing(gdir, seed)
        harness_done = time.monotonic()
        compile_stage = self.compile(problems, check)
        correct_stage, per_config = Stage("correctness", None), [{"config": c} for c in self.configs]
        perf_stage, speedups = Stage("performance", None), None
        if compile_stage.passed:
            correct_stage, per_config = self.check_correctness(gdir, check, seed)
        if correct_stage.passed:
            perf_stage, speedups, timed_ok = self.measure_performance(gdir, per_config, timed, seed)
            if not timed_ok:
                correct_stage.passed = False
                correct_stage.messages.append("the output of the timed runs was wrong (see performance)")
        mean = statistics.fmean(speedups) if speedups else None
        geo = math.exp(statistics.fmean(math.log(s) for s in speedups)) if speedups else None
        score = arena_score(bool(compile_stage.passed), bool(correct_stage.passed), mean)
        return Grade(task=self.task.env_id, hardware=self.hardware.id, interpreter=self.hardware.interpreter,
                     stages=[compile_stage, correct_stage, perf_stage], configs=per_config, speedup=mean,
                     speedup_geomean=geo, score=score, elapsed_s=time.monotonic() - start,
                     phases_s={"harness": harness_done - start, "compare": time.monotonic() - harness_done})

    def compile(self, problems: list[str], check: dict) -> Stage:
        """Compile gate: the files are in place, the module imports, and every Triton kernel compiles."""
        if problems:
            return Stage("compile", False, problems)
        if check.get("stage") == "compile":
            return Stage("compile", False, [_text(check.get("error") or "the candidate did not import")])
        return Stage("compile", True, ["module imported and kernels compiled", *self.launch_notes])

    def check_correctness(self, gdir: Path, check: dict, seed: int) -> tuple[Stage, list[dict]]:
        """Correctness gate: every seen config's output within the task's tolerance of the reference."""
        rows, messages = [], []
        if check.get("error"):
            messages.append(_text(check["error"]))
        ran_configs = check.get("configs")
        by_index = dict(enumerate(ran_configs)) if isinstance(ran_configs, list) else {}
        for i, cfg in enumerate(self.configs):
            row = {"config": cfg, "correct": False, "max_abs_err": None, "error": None}
            ran = by_index.get(i)
            if not isinstance(ran, dict):
                ran = {"ok": False, "error": "not run (the process ended early)"}
            if ran.get("ok") is not True:
                row["error"] = _text(ran.get("error"))
            else:
                ok, msg, err = self._compared(gdir / "outputs.pt", i, seed + i)
                row.update(correct=ok, max_abs_err=err, error=None if ok else msg)
            if row["error"]:
                lines = row["error"].strip().splitlines() or [""]
                messages.append(f"{cfg}: {lines[-1]}")
            rows.append(row)
        passed = bool(rows) and all(r["correct"] for r in rows)
        if passed:
            messages.insert(0, f"all {len(rows)} configs within tolerance")
        return Stage("correctness", passed, messages), rows

    def measure_performance(self, gdir: Path, rows: list[dict], res: dict | None,
                            seed: int) -> tuple[Stage, list[float] | None, bool]:
        """Performance: baseline and candidate timed in one process, interleaved in rounds (harness.py);
        speedup = baseline time / candidate time per config, each the interquartile mean of its runs
        (timing_stats.py).

        Returns (stage, per-config speedups or None, timed outputs correct). Speedup is withheld when a
        config's achieved bandwidth or FLOP rate is above the hardware profile's peak (a measurement error).
        """
        if self.hardware.interpreter:
            return Stage("performance", None, [NOT_MEASURED_ON_INTERPRETER]), None, True
        if not self.config.measure:
            return Stage("performance", None, ["not measured (measure=False)"]), None, True
        if not isinstance(res, dict) or res.get("stage") != "time":
            return Stage("performance", False, [_text(res.get("error") or "timing failed")]), None, True
        spec, speedups, messages, flagged = self.task.spec, [], [], False
        timed = res.get("configs")
        if not isinstance(timed, list) or len(timed) != len(rows) or not all(isinstance(t, dict) for t in timed):
            return Stage("performance", False, ["timing result malformed"]), None, True
        for i, (row, t) in enumerate(zip(rows, timed)):
            cfg = row["config"]
            if t.get("wrong_output"):  # a timed run's output differed from the baseline's on the same inputs
                msg = _text(t["wrong_output"], 600)
                row.update(correct=False, error=f"output of the timed path is wrong: {msg}")
                return Stage("performance", False, [f"{cfg}: output of the timed path is wrong: {msg}"]), None, False
            try:  # reported by the candidate's process: checked and summarized here
                if t.get("ok") is not True:
                    raise TimingError(_text(t.get("error")))
                base_runs, cand_runs, note = choose_runs(t)
                stats = summarize(base_runs, cand_runs, self.config.rounds)
            except TimingError as e:
                return Stage("performance", False, [f"{cfg}: timing failed: {e}"]), None, True
            if note:
                messages.append(f"{cfg}: {note}")
            ok, msg, _ = self._compared(timed_output_path(gdir, i), i, verify_seed(seed, i))
            if not ok:
                # Blocks kernels that are honest while checked and cheap while timed.
                row.update(correct=False, error=f"output of the timed path is wrong: {msg}")
                return Stage("performance", False, [f"{cfg}: output of the timed path is wrong: {msg}"]), None, False
            row.update(stats, timing_mode=str(t.get("candidate_mode")), baseline_timing_mode=str(t.get("baseline_mode")))
            if note:
                row.update(timing_mode=note, baseline_timing_mode=note)
            if spec.roofline:
                gbps, tflops = achieved(evaluate(spec.roofline.bytes, cfg), evaluate(spec.roofline.flops, cfg),
                                        row["candidate_ms"])
                peak_tflops = self.hardware.peak_tflops.get(PEAK_KEY.get(cfg.get("dtype"), cfg.get("dtype")), 0) or max(
                    self.hardware.peak_tflops.values(), default=0)
                row.update(achieved_gbps=gbps, achieved_tflops=tflops,
                           bandwidth_fraction=gbps / self.hardware.peak_bandwidth_gbps,
                           flops_fraction=tflops / peak_tflops if peak_tflops else None)
                if row["bandwidth_fraction"] > 1.0:
                    flagged = True
                    messages.append(f"{cfg}: {gbps:.0f} GB/s is above the {self.hardware.name} peak "
                                    f"({self.hardware.peak_bandwidth_gbps:.0f} GB/s): measurement error, no speedup")
                if (row["flops_fraction"] or 0) > 1.0:
                    flagged = True
                    messages.append(f"{cfg}: {tflops:.1f} TFLOP/s is above the {self.hardware.name} peak "
                                    f"({peak_tflops:.1f} TFLOP/s): measurement error, no speedup")
            speedups.append(row["speedup"])
        mean = statistics.fmean(speedups)
        messages.insert(0, f"speedup {mean:.3f}x (arithmetic mean of {len(speedups)} configs), baseline and "
                           f"candidate interleaved in {self.config.rounds} rounds, {self.config.warmup} warm-up + "
                           f"{self.config.reps} timed runs each, caches flushed before every run"
                           + ("" if res.get("persisting_l2_reset") else "; persisting-L2 reset unavailable"))
        return Stage("performance", not flagged, messages), (None if flagged else speedups), True

    # -- comparing the candidate's output files ------------------------------------------------
    def _compared(self, path: Path, i: int, ref_seed: int, final: bool = True) -> tuple[bool, str, float | None] | None:
        """`compare_outputs` of output `i` in the candidate-written file `path` (a dict saved by torch.save) with
        the reference of config `i` on seed `ref_seed`. Memoized: what `_compare_early` compared while the
        candidate still ran is not compared again, unless the file was replaced or changed since (the final call,
        made when no candidate code runs any more, checks: a candidate that wrote its own outputs.pt before the
        harness did must not have that early copy graded). Returns (ok, message, max_abs_err); with
        `final=False`, None where the file cannot be read yet, or changed while read (then nothing is remembered
        and the final call reads it again). Thread-safe; different files are compared in parallel (torch
        releases the GIL)."""
        with self._compare_lock:
            file_lock = self._file_locks.setdefault(path, threading.Lock())
        with file_lock:
            memo = self._compares.get((path, i))
            if final:  # no candidate code runs now: what was read early counts only if the file is still that one
                now = _identity(path)
                if path in self._files and self._files[path][1] != now:
                    del self._files[path]  # loaded early, replaced or written again since: load what is there now
                if memo is not None and memo[1] != now:
                    memo = None
            if memo is None:
                cfg, t = self.configs[i], time.monotonic()
                try:
                    if path not in self._files:  # outputs.pt holds every config's output: loaded once
                        cap, before = self._max_output_bytes(), _identity(path)
                        tensors = load_tensors_untrusted(path, max_bytes=cap, max_unpacked_bytes=cap)
                        if _identity(path) != before:
                            raise UntrustedFileError(f"{path.name}: changed while it was read")
                        self._files[path] = (tensors, before)
                    tensors, ident = self._files[path]
                    out = tensors.pop(str(i), None)  # dropped once compared: memory goes as it is done
                    result = (compare_outputs(out, self._reference(cfg, ref_seed), cfg, self._tolerance(cfg))
                              if out is not None
                              else (False, "no output saved", None))
                except UntrustedFileError as e:
                    if not final:
                        return None
                    result, ident = (False, f"output unreadable: {e}", None), _identity(path)
                memo = self._compares[(path, i)] = (result, ident)
                # For benchmarks/grading.py: (file, config, s spent, s since grading began when done)
                self.compare_log.append((path.name, i, time.monotonic() - t, time.monotonic() - self._grading_start))
            return memo[0]

    def _compare_early(self, pending: list[tuple[Path, int, int]], done: threading.Event) -> None:
        """While the candidate's process runs: compare each of the `pending` (file, config, reference seed) as soon
        as its file appears (the harness writes them whole, by rename), so little is left when the process ends."""
        while pending and not done.is_set():
            ready = next((p for p in pending if os.path.lexists(p[0])), None)  # in whatever order they come
            if ready is None:
                done.wait(0.005)
                continue
            pending.remove(ready)
            if self._compared(*ready, final=False) is None:
                return  # unreadable for now: left to the final comparison, after the process ended

    def _run_harness_comparing(self, gdir: Path, seed: int) -> tuple[dict, dict | None]:
        """`_run_harness`, with two `_compare_early` threads working beside it: one on the checked outputs, one
        on the timed ones."""
        done = threading.Event()
        n = len(self.configs)
        lists = [[(gdir / "outputs.pt", i, seed + i) for i in range(n)]]
        if not self.hardware.interpreter and self.config.measure:
            lists.append([(timed_output_path(gdir, i), i, verify_seed(seed, i)) for i in range(n)])
        threads = [threading.Thread(target=self._compare_early, args=(p, done), daemon=True) for p in lists]
        for t in threads:
            t.start()
        try:
            return self._run_harness(gdir, seed)
        finally:
            done.set()
            for t in threads:
                t.join()

    # -- plumbing ------------------------------------------------------------------------------
    def _fresh_dir(self, prefix: str) -> Path:
        d = self.work_dir / f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
        d.mkdir(parents=True, mode=0o700)  # owner-only: what the candidate leaves there is out of other users' reach
        return d

    def _new_grading_dir(self, seed: int) -> Path:
        """A fresh grading directory with the task's pristine public files and the harness request for `seed`;
        the editable files are copied in at grading time."""
        gdir = self._fresh_dir("grade")
        copy_public(self.task, gdir)
        _write_new(gdir / "request.json", json.dumps(self._request(gdir, seed)).encode())
        return gdir

    def _max_output_bytes(self) -> int:
        """Generous cap on what the candidate's outputs may unpack to: 8 bytes per reference element, plus 16 MB."""
        self._ref_thread.join()
        return sum(8 * int(r.numel()) for r in self._refs.values()) + (16 << 20)

    def _start_references(self, seed: int) -> None:
        """Compute the reference outputs for this grading's seeds in a thread (torch releases the GIL)."""
        reference, builder = load_reference(self.task)
        seeds = [(cfg, seed + i) for i, cfg in enumerate(self.configs)]
        if not self.hardware.interpreter and self.config.measure:  # inputs of the timed-path check
            seeds += [(cfg, verify_seed(seed, i)) for i, cfg in enumerate(self.configs)]
        self._refs: dict[tuple[str, int], Any] = {}

        def work():
            for cfg, s in seeds:
                ref = reference(*builder(cfg, s, "cpu"))
                self._refs[(json.dumps(cfg, sort_keys=True), s)] = prepare_reference(ref, self._tolerance(cfg))
        self._ref_thread = threading.Thread(target=work, daemon=True)
        self._ref_thread.start()

    def _tolerance(self, cfg: dict):
        return self.task.spec.tolerance[cfg["dtype"]]

    def _reference(self, cfg: dict, seed: int) -> PreparedReference:
        self._ref_thread.join()
        key = (json.dumps(cfg, sort_keys=True), seed)
        if key not in self._refs:
            reference, builder = load_reference(self.task)
            self._refs[key] = prepare_reference(reference(*builder(cfg, seed, "cpu")), self._tolerance(cfg))
        return self._refs[key]

    def _harness_env(self) -> dict[str, str]:
        return {"TRITON_INTERPRET": "1"} if self.hardware.interpreter else {}

    def _request(self, gdir: Path, seed: int) -> dict:
        """The harness request for grading `gdir` (mode ``grade``: check, then timing on a GPU)."""
        return {"mode": "grade", "directory": str(gdir), "entry_point": self.task.spec.entry_point,
                "input_builder": self.task.spec.input_builder, "builder_directory": str(self.baseline_dir),
                "configs": self.configs, "seed": seed,
                "device": self.device, "result": str(gdir / "check_result.json"),
                "time_result": str(gdir / "time_result.json"), "outputs": str(gdir / "outputs.pt"),
                "timed_outputs": [str(timed_output_path(gdir, i)) for i in range(len(self.configs))],
                "baseline_directory": None if self.hardware.interpreter or not self.config.measure
                else str(self.baseline_dir),
                "warmup": self.config.warmup, "reps": self.config.reps, "rounds": self.config.rounds,
                "input_sets": self.config.input_sets, "flush_bytes": self.hardware.flush_bytes,
                "tolerances": [self._tolerance(cfg).model_dump() for cfg in self.configs],
                "require_triton_launch": self.task.spec.language == "triton"}

    def _run_harness(self, gdir: Path, seed: int) -> tuple[dict, dict | None]:
        """Run harness.py in mode ``grade`` on `gdir`: through the warm worker when one is up, else in a fresh
        sandboxed process. Returns (check result, timing result or None); failures are results, not raises."""
        request = self._request(gdir, seed)
        check_path, time_path = Path(request["result"]), Path(request["time_result"])
        timed_out, output = False, None
        if self.worker is not None and self.worker.alive():
            code, timed_out, unprepared = self.worker.request(gdir / "request.json", self.config.timeout_s)
            if not self.keep_worker:
                self.stop_worker()  # one grading per worker: nothing a candidate did to it outlives this grading
            try:
                output = read_untrusted(gdir / "harness.log", 1 << 20).decode(errors="replace")
            except UntrustedFileError:
                output = ""
            if unprepared:
                output = None  # the preparation failed before any candidate code ran: a fresh process grades
                (gdir / "request.json").unlink(missing_ok=True)  # rewritten by the parent, not read back from the grading dir
                _write_new(gdir / "request.json", json.dumps(request).encode())
            # Otherwise the result stands, whatever it is: a candidate that killed the worker or deleted its log
            # gets no second run (and no second chance at the grading directory's request).
        if output is None:
            sandbox = make_sandbox(self.config.sandbox, gdir, readonly=[HARNESS, self.baseline_dir],
                                   gpu=not self.hardware.interpreter, env=self._harness_env())
            run = sandbox.run([PYTHON, str(HARNESS), str(gdir / "request.json")],
                              limits=Limits(timeout_s=self.config.timeout_s, max_output_bytes=8000))
            timed_out, output, code = run.timed_out, run.output, run.returncode
        if timed_out:
            return {"stage": "check", "ok": False, "configs": [],
                    "error": f"the candidate ran past the {self.config.timeout_s:.0f} s limit and was killed"}, None
        try:
            check = load_json_untrusted(check_path)
        except UntrustedFileError:
            # Died with no result: before the import finished it is a compile failure, after it a runtime one.
            stage = "compile" if IMPORTED_MARKER not in output else "check"
            return {"stage": stage, "ok": False, "configs": [],
                    "error": f"the candidate process died (exit code {code}):\n{output[-3000:]}"}, None
        try:
            timed = load_json_untrusted(time_path) if os.path.lexists(time_path) else None
        except UntrustedFileError:
            timed = None
        if timed is None and request["baseline_directory"] and check.get("stage") == "check":
            timed = {"stage": "time-failed", "error": f"timing produced no result:\n{output[-3000:]}"}
        return check, timed
