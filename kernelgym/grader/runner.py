"""The runner seam: how the candidate's harness process is run for one grading, chosen once per grading.

Two implementations of one protocol, `Runner.run(gdir) -> HarnessRun`:

- `WarmRunner`: the grading was prepared by a warm worker while the agent worked (worker.py); the worker's child
  imports and runs the candidate. Where the preparation failed before any candidate code ran (``unprepared``), it
  hands the grading to its `FreshRunner`; once candidate code may have run, the result stands, whatever it is.
- `FreshRunner`: a fresh sandboxed harness process, with the parent's own copy of the request.

Both end in `read_results`, which reads the harness's result files (untrusted; parsed later by
`protocol.parse_check_result` and `parse_time_result`) and says what went wrong outside the kernel's gates
(`HarnessRun.fault`): the time limit, or an infrastructure fault (a fresh process that died before it printed
`PREPARED_MARKER`, read from the trusted pipe's head, ran no candidate code). The plain path and the fast path give
the same verdicts (tests/test_fast_path.py).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from kernelgym.grader.files import write_new
from kernelgym.grader.outcome import FAULT_INFRA, FAULT_TIMEOUT
from kernelgym.grader.tracer import remove_traces
from kernelgym.grader.protocol import (CHECK_RESULT, HARNESS_LOG, IMPORTED_FILE, PREPARED_MARKER, REQUEST,
                                       TIME_RESULT, Request)
from kernelgym.grader.untrusted import UntrustedFileError, load_json_untrusted, read_untrusted
from kernelgym.grader.worker import HARNESS, GraderWorker
from kernelgym.sandbox import PYTHON, BubblewrapSandbox, Limits, UnsandboxedRunner


@dataclass
class HarnessRun:
    """What one run of the harness left: its raw results (untrusted JSON) and a fault outside the kernel's gates."""

    check: dict
    """The check result as written (or the parent's own failure record: died, timed out)."""
    timed: dict | None
    """The timing result, None where the grading is not timed or the check failed first."""
    fault: str | None = None
    """`outcome.FAULT_TIMEOUT`, `outcome.FAULT_INFRA`, or None."""
    result_written: bool = True
    """Whether the harness's check result file was there (False: the process died or timed out without one, and
    `check` is the parent's own record)."""


class Runner(Protocol):
    """Runs the harness on one grading directory, whose request is written; never raises for a bad kernel."""

    def run(self, gdir: Path) -> HarnessRun: ...


@dataclass
class FreshRunner:
    """A fresh sandboxed harness process for the grading in `gdir`.

    Args:
        request: the parent's own copy of the request, written anew (the harness deletes the file once read, and
            the one in the grading directory may be the candidate's by now).
        sandbox: the sandbox binding the grading directory (and the harness files read-only).
        timeout_s: the process's limit, s.
        timed: whether the grading is timed (a missing timing result is then a failure).
        kill_others: pass ``--kill-others`` (bwrap only: alone in its pid namespace, the harness stops every other
            process before it writes a result).
    """

    request: Request
    sandbox: BubblewrapSandbox | UnsandboxedRunner
    timeout_s: float
    timed: bool
    kill_others: bool

    def run(self, gdir: Path) -> HarnessRun:
        (gdir / REQUEST).unlink(missing_ok=True)
        if self.request.traced:  # a prepared child that died before any candidate code ran may have left its trace
            remove_traces(gdir)
        write_new(gdir / REQUEST, json.dumps(self.request.to_json()).encode())
        argv = [PYTHON, str(HARNESS), str(gdir / REQUEST), *(["--kill-others"] if self.kill_others else [])]
        run = self.sandbox.run(argv, limits=Limits(timeout_s=self.timeout_s, max_output_bytes=8000))
        return read_results(gdir, run.output, run.returncode, run.timed_out, self.timeout_s, self.timed, fresh=True)


@dataclass
class WarmRunner:
    """The grading prepared by `worker` (its child waits, prepared, for ``go``).

    Args:
        worker: the warm worker that prepared this grading.
        fallback: makes the runner of the grading where the preparation failed before any candidate code ran
            (made only then: the warm path needs no fresh sandbox or request).
        timeout_s: the limit of the worker's run, s.
        timed: whether the grading is timed.
        on_started: called once the worker says its child is prepared, before the ``go`` that lets candidate code
            run (the grader records the wait and keeps the baseline's kernel cache then).
        stop_after: stop the worker after this run (one grading per worker: nothing a candidate did to it outlives
            this grading); False only for `Grader.keep_worker` gradings of trusted code.
    """

    worker: GraderWorker
    fallback: Callable[[], FreshRunner]
    timeout_s: float
    timed: bool
    on_started: Callable[[], None]
    stop_after: bool = True

    def run(self, gdir: Path) -> HarnessRun:
        code, timed_out, unprepared = self.worker.request(gdir / REQUEST, self.timeout_s, on_started=self.on_started)
        if self.stop_after:
            self.worker.stop()
        if unprepared:  # no candidate code ran: a fresh process grades
            return self.fallback().run(gdir)
        # Otherwise the result stands, whatever it is: a candidate that killed the worker or deleted its log gets no
        # second run (and no second chance at the grading directory's request).
        try:
            output = read_untrusted(gdir / HARNESS_LOG, 1 << 20).decode(errors="replace")
        except UntrustedFileError:
            output = ""
        return read_results(gdir, output, code, timed_out, self.timeout_s, self.timed, fresh=False)


def read_results(gdir: Path, output: str, code: int | None, timed_out: bool, timeout_s: float, timed: bool,
                 fresh: bool) -> HarnessRun:
    """The harness's results in `gdir` once its process is gone, or the parent's record of how it failed.

    Args:
        output: the process's output (a fresh process: the trusted pipe's head and tail; a worker's child: its log
            in the grading directory, which the candidate may have rewritten).
        code: its exit code (None where unknown). timed_out: it was killed at `timeout_s`.
        timed: whether a timing result is expected. fresh: `output` came from the trusted pipe.
    """
    if timed_out:
        return HarnessRun({"stage": "check", "ok": False, "configs": [],
                           "error": f"the candidate ran past the {timeout_s:.0f} s limit and was killed"}, None,
                          FAULT_TIMEOUT, result_written=False)
    try:
        check = load_json_untrusted(gdir / CHECK_RESULT)
    except UntrustedFileError:
        # Died with no result: before the import finished it is a compile failure, after it a runtime one (the
        # harness's file says which; a printed line would be the candidate's to forge).
        stage = "check" if os.path.lexists(gdir / IMPORTED_FILE) else "compile"
        # Without the marker on the trusted pipe no candidate code ran (the sandbox did not start, CUDA or the
        # inputs failed): the machine's fault, not the kernel's.
        fault = FAULT_INFRA if fresh and PREPARED_MARKER not in output else None
        return HarnessRun({"stage": stage, "ok": False, "configs": [],
                           "error": f"the candidate process died (exit code {code}):\n{output[-3000:]}"}, None, fault,
                          result_written=False)
    time_path = gdir / TIME_RESULT
    try:
        timing = load_json_untrusted(time_path) if os.path.lexists(time_path) else None
    except UntrustedFileError:
        timing = None
    if timing is None and timed and check.get("stage") == "check":
        timing = {"stage": "time-failed", "error": f"timing produced no result:\n{output[-3000:]}"}
    return HarnessRun(check, timing)
