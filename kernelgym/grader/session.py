"""`GradingSession`: the state of one grading, owned in one place.

A session is made for one (grading directory, seed): the task's public files and the harness request are in the
directory, the reference outputs are computed in the background, and the candidate's output files are compared
as they appear (`compare_early`, the fast path) or at the end (`compared`, which every verdict comes from).
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernelgym.grader.cache import GRADING_CACHE, task_config_key
from kernelgym.grader.compare import compare_output
from kernelgym.grader.files import identity
from kernelgym.grader.protocol import OUTPUTS, check_seed, output_key, timed_output_name, verify_seed
from kernelgym.grader.reference import References
from kernelgym.grader.untrusted import UntrustedFileError, load_tensors_untrusted
from kernelgym.task import Task

#: What one comparison gives: (ok, message, max |err| or None).
Verdict = tuple[bool, str, "float | None"]


@dataclass
class GradingSession:
    """One grading: its directory, seed and configs, its references, and the comparisons of the candidate's outputs.

    Attributes:
        compare_log: (file, config, s spent, s since the grading began when done) per comparison, for
            benchmarks/grading.py.
    """

    task: Task
    gdir: Path
    seed: int
    configs: list[dict]
    references: References
    timed: bool
    """Whether the harness times the candidate (then its timed-path outputs are compared too)."""
    started: float = field(default_factory=time.monotonic)
    compare_log: list[tuple[str, int, float, float]] = field(default_factory=list)
    build_notes: list[str] = field(default_factory=list)
    """What the compile gate's build step said (compiled languages)."""
    launch_notes: list[str] = field(default_factory=list)
    """Launch options in the sources that this hardware does not support (launch_options.py)."""
    trusted_build: Path | None = None
    """The build directory the trusted side compiled (compiled languages); the observed run loads this one."""
    traced: bool = False
    """Its own checked run is its observed run (the request's ``traced``; `Observing.traces_checked_run`)."""
    observer_ahead: str | None = None
    """What became of the observed run started ahead of this grading (for the grade's notes and benchmarks)."""
    observer_log: str = ""
    """The tail of the observed run's harness log (its phases), for diagnosis."""
    observed_dirs: list[Path] = field(default_factory=list)
    """The observed run's directories, removed once the grade is read."""
    prepare_wait_s: float | None = None
    fault: str | None = None
    result_written: bool = True
    """Whether the harness wrote its check result (runner.HarnessRun.result_written)."""
    """What went wrong outside the kernel's gates (`outcome.FAULT_INFRA`, `outcome.FAULT_TIMEOUT`), else None."""
    """How long the warm worker's run waited for its prepared child to be ready, s (None: no warm worker)."""
    _memo: dict = field(default_factory=dict)
    _files: dict = field(default_factory=dict)
    _file_locks: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls, task: Task, gdir: Path, seed: int, configs: list[dict], timed: bool, gpu: bool,
              seen: bool, on_gpu: bool = False, turn=contextlib.nullcontext) -> "GradingSession":
        """A session whose references (the check inputs' and, where `timed`, the verification inputs') are computed
        in the background from now. `seen`: the configs are the task's seen ones, on which a trivial output
        passing is a task error. `on_gpu`: references and comparisons run on the GPU in this process
        (`GraderConfig.references_on_gpu`), each holding `turn()` (`References`)."""
        jobs = [(cfg, check_seed(seed, i)) for i, cfg in enumerate(configs)]
        if timed:
            jobs += [(cfg, verify_seed(seed, i)) for i, cfg in enumerate(configs)]
        # The trivial-output check judges the task's tolerances, not the candidate: once per process and config.
        trivial = [c for c in configs if GRADING_CACHE.first_time(task_config_key(task.root, c))] if seen else None
        refs = References(task, jobs, gpu=gpu, check_trivial=trivial, work_dir=gdir.parent, on_gpu=on_gpu, turn=turn)
        return cls(task, gdir, seed, configs, refs, timed)

    # -- the files the candidate's process writes ----------------------------------------------------------------
    def checked_outputs(self) -> list[tuple[Path, int, int]]:
        """(file, config, reference seed) of every checked output."""
        return [(self.gdir / OUTPUTS, i, check_seed(self.seed, i)) for i in range(len(self.configs))]

    def timed_outputs(self) -> list[tuple[Path, int, int]]:
        """(file, config, reference seed) of every timed-path output (none where the harness does not time)."""
        if not self.timed:
            return []
        return [(self.gdir / timed_output_name(i), i, verify_seed(self.seed, i)) for i in range(len(self.configs))]

    def max_output_bytes(self) -> int:
        """Generous cap on what the candidate's outputs may unpack to: 8 bytes per reference element, plus 16 MB."""
        return 8 * self.references.elements() + (16 << 20)

    # -- comparing -------------------------------------------------------------------------------------------------
    def compared(self, path: Path, i: int, ref_seed: int, final: bool = True) -> Verdict | None:
        """Every output of config `i` in the candidate-written file `path` (a flat dict saved by torch.save, keys
        `protocol.output_key`) compared with the reference of config `i` on seed `ref_seed`.

        Memoized: what `compare_early` compared while the candidate still ran is not compared again, unless the
        file was replaced or changed since (the final call, made when no candidate code runs any more, checks: a
        candidate that wrote its own outputs file before the harness did must not have that early copy graded).
        Returns (ok, message, max_abs_err); with `final=False`, None where the file cannot be read yet, or changed
        while read (then nothing is remembered and the final call reads it again). Thread-safe; different files
        are compared in parallel (torch releases the GIL)."""
        with self._lock:
            file_lock = self._file_locks.setdefault(path, threading.Lock())
        with file_lock:
            memo = self._memo.get((path, i))
            if final:  # no candidate code runs now: what was read early counts only if the file is still that one
                now = identity(path)
                if path in self._files and self._files[path][1] != now:
                    del self._files[path]  # loaded early, replaced or written again since: load what is there now
                if memo is not None and memo[1] != now:
                    memo = None
            if memo is None:
                t = time.monotonic()
                try:
                    if path not in self._files:  # one file holds every config's outputs: loaded once
                        cap, before = self.max_output_bytes(), identity(path)
                        tensors = load_tensors_untrusted(path, max_bytes=cap, max_unpacked_bytes=cap)
                        if identity(path) != before:
                            raise UntrustedFileError(f"{path.name}: changed while it was read")
                        self._files[path] = (tensors, before)
                    tensors, ident = self._files[path]
                    result = self._compare_config(tensors, i, ref_seed)
                except UntrustedFileError as e:
                    if not final:
                        return None
                    result, ident = (False, f"output unreadable: {e}", None), identity(path)
                memo = self._memo[(path, i)] = (result, ident)
                self.compare_log.append((path.name, i, time.monotonic() - t, time.monotonic() - self.started))
            return memo[0]

    def _compare_config(self, tensors: dict, i: int, ref_seed: int) -> Verdict:
        """Compare config `i`'s outputs in `tensors` (dropped once compared: memory goes as it is done)."""
        cfg, outputs = self.configs[i], self.task.spec.outputs
        refs = self.references.get(cfg, ref_seed)  # before any turn: the references take theirs
        errors, messages = [], []
        for o, ref in zip(outputs, refs):
            out = tensors.pop(output_key(i, o.name), None)
            if out is None:
                ok, msg, err = False, "no output saved", None
            else:
                # Held on the GPU: the schedule's shared side, where quiet turns ask for it (References.turn).
                with self.references.turn() if self.references.device != "cpu" else contextlib.nullcontext():
                    ok, msg, err = compare_output(out, ref, o.dtype_for(cfg), o.rule_for(cfg),
                                                  self.task.spec.tolerance_for(o, cfg))
            if len(outputs) > 1:
                msg = f"{o.name}: {msg}"
            if not ok:
                return False, msg, err
            messages.append(msg)
            errors.append(err)
        known = [e for e in errors if e is not None]
        return True, "; ".join(messages), max(known) if known else None

    def compare_early(self, pending: list[tuple[Path, int, int]], done: threading.Event) -> None:
        """While the candidate's process runs: compare each of the `pending` (file, config, reference seed) as soon
        as its file appears (the harness writes them whole, by rename), so little is left when the process ends."""
        pending = list(pending)
        while pending and not done.is_set():
            ready = next((p for p in pending if os.path.lexists(p[0])), None)  # in whatever order they come
            if ready is None:
                done.wait(0.005)
                continue
            pending.remove(ready)
            try:
                if self.compared(*ready, final=False) is None:
                    return  # unreadable for now: left to the final comparison, after the process ended
            except Exception:  # noqa: BLE001 - a broken task's reference: the final comparison raises it to the caller
                return
