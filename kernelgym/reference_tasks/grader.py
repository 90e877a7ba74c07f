"""Grading a reference-format task by its own commands: compile -> correctness -> performance -> the arena score.

Each grading gets a fresh directory: the task folder's files pristine, the agent's `source_file_path` files copied
out of the workspace (regular files only: kernelgym.grader.files), and the AKA-GENERATED block replaced by
kernelgym's timing helpers. Each stage's commands run there, one after another, inside the sandbox kernelgym runs
everything in (kernelgym.sandbox), under the stage's timeout for all of them together. A stage fails where a command
exits nonzero or times out, or where its JSON report says ``"status": "fail"``; its reports are read only once the
command returned, when `sandbox.run` has killed the sandbox's whole process tree, and without following any link
(reports.py). The baseline's times come from the performance command run on the original sources, in rounds
alternating with the candidate's. A grading directory is removed once graded: the grade holds what it says.

Trust: these commands import the candidate's module in the process that checks it and writes the reports, so the
grade is as trustworthy as the task's own scripts (the sandbox keeps the candidate away from the host, other runs and
the pristine task; kernelgym's own provenance checks and observer do not apply). docs/REFERENCE_TASKS.md says so.
"""
from __future__ import annotations

import json
import math
import re
import shlex
import shutil
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kernelgym.backends import get_backend
from kernelgym.grader.files import tree_usage
from kernelgym.grader import Grade, GraderConfig, outcome
from kernelgym.grader.grader import NOT_MEASURED_ON_INTERPRETER, Stage
from kernelgym.grader.files import copy_editable, remove_tree, write_new
from kernelgym.grader.score import arena_score
from kernelgym.hardware import HardwareProfile
from kernelgym.reference_tasks.placeholder import PlaceholderError, materialize_tree
from kernelgym.reference_tasks.reports import ReportError, read_report, remove_report
from kernelgym.reference_tasks.spec import (COMPILE_REPORT, CORRECTNESS_REPORT, PERFORMANCE_REPORT, ROCMBENCH_REPORT,
                                            ReferenceTask)
from kernelgym.sandbox import PYTHON, Limits, make_sandbox
from kernelgym.task import read_task_file

#: Command output kept in a failed stage's message (the tail: errors come last).
MAX_STAGE_OUTPUT = 6000
#: Rounds in which the baseline's and the candidate's performance commands alternate; per case the median is kept.
ROUNDS = 3


def command_line(cmd: str) -> str:
    """`cmd` with a leading ``python3``/``python`` or ``pytest`` turned into kernelgym's Python (the format's rule)."""
    m = re.match(r"^\s*(python3|python|pytest)(?=\s|$)", cmd)
    if m is None:
        return cmd
    program = shlex.quote(PYTHON) + (" -m pytest" if m.group(1) == "pytest" else "")
    return program + cmd[m.end():]


def prepare_dir(task: ReferenceTask, dest: Path, workspace: Path | None = None) -> list[str]:
    """Fill the new folder `dest`: the task's files pristine, with the `source_file_path` files from `workspace`
    (None: the originals), and the AKA-GENERATED block materialized. Returns problems (a source file missing or a
    symlink in the workspace, a malformed block); empty when fine."""
    editable = set(task.spec.source_file_path)
    for rel in task.files():
        if workspace is None or str(rel) not in editable:
            write_new(dest / rel, read_task_file(task.root, rel))
    problems = []
    if workspace is not None:
        # copy_editable reads only `spec.editable_files`: the same trust boundary as kernelgym's own tasks.
        problems = copy_editable(SimpleNamespace(spec=SimpleNamespace(editable_files=sorted(editable))),
                                 Path(workspace).resolve(), dest)
    try:
        materialize_tree(dest)
    except PlaceholderError as e:
        problems.append(str(e))
    return problems


@dataclass
class StageRun:
    """What one stage's commands did: passed, one message per command (the failing one with its output)."""

    passed: bool
    messages: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0


def _tail(text: str) -> str:
    return text if len(text) <= MAX_STAGE_OUTPUT else f"[... {len(text) - MAX_STAGE_OUTPUT} characters cut ...]\n" \
        + text[-MAX_STAGE_OUTPUT:]


def read_status_report(root: Path, report: str) -> tuple[str | None, str | None]:
    """(status, error) of the compile or correctness report `report` under `root`; (None, None) where the command
    wrote none.

    A report that is not a regular file holding a JSON object with a string ``status`` reads as ``("fail", why)``."""
    try:
        data = read_report(root, report, 4 << 20)
        if data is None:
            return None, None
        obj = json.loads(data)
    except ReportError as e:
        return "fail", str(e)
    except (ValueError, RecursionError) as e:
        return "fail", f"{report} unreadable: {e}"
    if not isinstance(obj, dict) or not isinstance(obj.get("status"), str):
        return "fail", f"{report}: expected an object with a string `status`"
    error = obj.get("error")
    return obj["status"], None if error is None else str(error)


def run_stage(sandbox, root: Path, commands: list[str], timeout_s: float, report: str | None) -> StageRun:
    """Run `commands` in order in `root` (the sandbox's workspace) within `timeout_s` for all; the stage passes when
    each exits 0 and `report` (relative to `root`), where written, has status ``ok``."""
    start = time.monotonic()
    if report is not None:
        try:
            remove_report(root, report)
        except ReportError as e:
            return StageRun(False, [str(e)], time.monotonic() - start)
    messages = []
    for cmd in commands:
        left = timeout_s - (time.monotonic() - start)
        if left <= 0:
            return StageRun(False, messages + [f"`{cmd}`: not run, the stage's {timeout_s:.0f} s were spent"],
                            time.monotonic() - start)
        result = sandbox.run(command_line(cmd), limits=Limits(timeout_s=left))
        if result.timed_out or result.returncode != 0:
            what = (f"timed out (the stage's limit is {timeout_s:.0f} s)" if result.timed_out
                    else f"exit code {result.returncode}")
            return StageRun(False, messages + [f"`{cmd}`: {what}; output:\n{_tail(result.output)}"],
                            time.monotonic() - start)
        messages.append(f"`{cmd}`: exit 0 in {result.elapsed_s:.1f} s")
    if report is not None:
        status, error = read_status_report(root, report)
        if status is not None and status != "ok":
            return StageRun(False, messages + [f"{report}: status {status!r}" + (f", error: {error}" if error else "")],
                            time.monotonic() - start)
        messages.append(f"{report}: status ok" if status else f"{report}: not written (exit codes decide)")
    return StageRun(True, messages, time.monotonic() - start)


def _case_time(case: dict) -> float:
    """The case's time, ms; -1 where it failed (missing, -1, NaN or not positive).

    Raises:
        ValueError: the time is not a number, an integer too large for a float, or below `MIN_TIME_MS`."""
    value = case.get("execution_time_ms")
    if value is None and isinstance(case.get("timing_ms"), dict):
        value = case["timing_ms"].get("mean")
    if value is None:
        return -1.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"time {str(value)[:40]!r} is not a number")
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(f"time {str(value)[:40]}... is too large for a float") from None
    if math.isfinite(value) and 0 < value < MIN_TIME_MS:
        raise ValueError(f"time {value:g} ms is below {MIN_TIME_MS * 1e6:g} ns: not a measurement")
    return value if math.isfinite(value) and value > 0 else -1.0


#: No kernel call takes less (ms): a report's smaller time is refused (1e-320 ms made the speedup infinite).
MIN_TIME_MS = 1e-6


def read_performance_report(root: Path) -> tuple[dict[str, tuple[dict, float]], str | None]:
    """The cases of the performance report in `root` (build/performance_report.json, else ROCmBench's
    perf/benchmark_results.json): ({params as canonical JSON: (params, ms per call)}, error). A case's time is its
    ``execution_time_ms`` (else ``timing_ms.mean``); -1, missing, NaN or not positive is -1 (a failed case). A report
    that is no regular file, not JSON, or has a time that is not a number (or overflows a float) is an error."""
    try:
        rel, data = PERFORMANCE_REPORT, read_report(root, PERFORMANCE_REPORT)
        if data is None:
            rel, data = ROCMBENCH_REPORT, read_report(root, ROCMBENCH_REPORT)
    except ReportError as e:
        return {}, str(e)
    if data is None:
        return {}, f"no performance report ({PERFORMANCE_REPORT} or {ROCMBENCH_REPORT}) was written"
    try:
        cases = json.loads(data)
    except (ValueError, RecursionError) as e:
        return {}, f"{rel} unreadable: {e}"
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        return {}, f"{rel}: expected a list of test cases (objects)"
    out = {}
    for i, case in enumerate(cases):
        params = case.get("params")
        params = params if isinstance(params, dict) else {"test_case_id": case.get("test_case_id", i)}
        try:
            out[json.dumps(params, sort_keys=True, default=str)] = (params, _case_time(case))
        except (ValueError, RecursionError) as e:
            return {}, f"{rel}: test case {i}: {e}"
    if not out:
        return {}, f"{rel}: no test cases"
    return out, None


def median_times(rounds: list[dict[str, tuple[dict, float]]]) -> dict[str, tuple[dict, float]]:
    """Per case, the median of its times over `rounds`; -1 where any round failed it or lacks it."""
    out = {}
    for key, (params, _) in rounds[0].items():
        times = [r.get(key, (params, -1.0))[1] for r in rounds]
        out[key] = (params, -1.0 if min(times) <= 0 else statistics.median(times))
    return out


def compare_cases(baseline: dict[str, tuple[dict, float]], candidate: dict[str, tuple[dict, float]]
                  ) -> tuple[list[dict[str, Any]], list[float], list[str]]:
    """Per-case rows and speedups, cases matched by `params`: (rows, ratios, problems). A case the baseline failed
    is left out; one the candidate failed or lacks counts as speedup 0 and is a problem."""
    rows, ratios, problems = [], [], []
    for key, (params, base_ms) in baseline.items():
        cand_ms = candidate.get(key, (params, -1.0))[1]
        if base_ms <= 0:
            problems.append(f"{params}: the baseline failed this case; left out")
            continue
        ratio = base_ms / cand_ms if cand_ms > 0 else 0.0
        if cand_ms <= 0:
            problems.append(f"{params}: failed (-1) or missing in the candidate's report; counted as speedup 0")
        rows.append({"config": params, "correct": True, "baseline_ms": base_ms,
                     "candidate_ms": cand_ms if cand_ms > 0 else None, "speedup": ratio})
        ratios.append(ratio)
    return rows, ratios, problems


class ReferenceGrader:
    """Grades the `source_file_path` files of a workspace by the task's own commands.

    Args:
        task: the reference task.
        hardware: the hardware profile; on the CPU interpreter nothing is timed (no performance stage).
        work_dir: where grading directories are made (outside every workspace).
        config: `GraderConfig`; its `sandbox` and `measure` are used.
        rounds: performance rounds, baseline and candidate alternating.
        cap_bytes: disk space a grading directory may take (the env's workspace cap); a grade whose directory
            took more says so in its `checks` (``disk``). None: not checked. So does one that holds more entries
            than `GraderConfig.grading_dir_cap_files` (checked always).
    """

    def __init__(self, task: ReferenceTask, hardware: HardwareProfile, work_dir: Path,
                 config: GraderConfig | None = None, rounds: int = ROUNDS, cap_bytes: int | None = None):
        self.task, self.hardware, self.config, self.rounds = task, hardware, config or GraderConfig(), rounds
        self.cap_bytes = cap_bytes
        self.work_dir = Path(work_dir).resolve()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._count = 0
        self._baseline_dir: Path | None = None

    @staticmethod
    def sandbox_env(hardware: HardwareProfile) -> dict[str, str]:
        """The environment the task's commands run with: Triton's interpreter switch on the CPU interpreter (the
        arena's task types are Triton or HIP, and HIP ones are refused off AMD: support.py)."""
        interpreter_env = get_backend("triton").INTERPRETER_ENV
        return dict(interpreter_env) if hardware.interpreter else {}

    def _sandbox(self, root: Path):
        return make_sandbox(self.config.sandbox, root, gpu=not self.hardware.interpreter,
                            env=self.sandbox_env(self.hardware))

    # Nothing of this grader runs in the background: the folder's commands run at grading only.
    def spawn(self) -> None:
        """Does nothing: there is no warm worker (the folder's commands run at grading only)."""

    def start_worker(self, seed: int | None = None, hold_observer: bool = False) -> None:
        """Does nothing: there is no warm worker (the folder's commands run at grading only)."""

    def release_observer(self) -> None:
        """Does nothing: nothing is held back."""

    def stop_worker(self) -> None:
        """Does nothing: `start_worker` starts nothing."""

    def wait_for_baseline(self) -> None:
        """Returns at once: no baseline observation runs in the background."""

    def _new_dir(self, label: str) -> Path:
        self._count += 1
        d = self.work_dir / f"{label}-{self._count}-{time.strftime('%H%M%S')}"
        d.mkdir(parents=True)
        return d

    def grade(self, workspace: Path, seed: int | None = None) -> Grade:
        """Grade the `source_file_path` files in `workspace` (`seed` is unused: the task's scripts fix their own
        inputs). Never raises for a bad kernel: failures are stages with the commands' output. The grading directory
        is removed before this returns."""
        gdir = self._new_dir("grading")
        try:
            grade = self._grade_in(gdir, Path(workspace))
            cap_files = self.config.grading_dir_cap_files
            used = tree_usage(gdir, self.cap_bytes if self.cap_bytes is not None else float("inf"), cap_files)
            over = []
            if self.cap_bytes is not None and used.bytes > self.cap_bytes:
                over.append(f"the grading directory took more than the workspace cap of {self.cap_bytes} bytes "
                            f"({used.bytes} counted when the walk stopped)")
            if used.entries > cap_files:
                over.append(f"the grading directory held more than {cap_files} files and directories "
                            f"(GraderConfig.grading_dir_cap_files)")
            if over:
                grade.checks["disk"] = "; ".join(over)
            return grade
        finally:
            remove_tree(gdir)

    def _grade_in(self, gdir: Path, workspace: Path) -> Grade:
        start, spec = time.monotonic(), self.task.spec
        problems = prepare_dir(self.task, gdir, workspace)
        phases: dict[str, float] = {}
        if problems:
            compile_run = StageRun(False, problems)
        else:
            sandbox = self._sandbox(gdir)
            compile_run = run_stage(sandbox, gdir, spec.compile_command, spec.compile_timeout, COMPILE_REPORT)
            phases["compile"] = compile_run.elapsed_s
        compile_stage = Stage("compile", compile_run.passed, compile_run.messages)
        correct_stage = Stage("correctness", None)
        perf_stage, rows, speedups = Stage("performance", None), [], None
        if compile_stage.passed:
            run = run_stage(sandbox, gdir, spec.correctness_command, spec.correctness_timeout, CORRECTNESS_REPORT)
            correct_stage = Stage("correctness", run.passed, run.messages)
            phases["correctness"] = run.elapsed_s
        if correct_stage.passed:
            t = time.monotonic()
            perf_stage, rows, speedups = self.measure_performance(gdir, sandbox)
            phases["performance"] = time.monotonic() - t
        mean = statistics.fmean(speedups) if speedups else None
        geo = (math.exp(statistics.fmean(math.log(s) for s in speedups))
               if speedups and min(speedups) > 0 else None)
        score = arena_score(bool(compile_stage.passed), bool(correct_stage.passed), mean)
        checks = {"format_commands": "passed" if correct_stage.passed else "failed",
                  "static_check": "not run: a reference-format task is graded by its own commands",
                  "observer": "not run: a reference-format task is graded by its own commands"}
        return Grade(task=self.task.env_id, hardware=self.hardware.id, interpreter=self.hardware.interpreter,
                     stages=[compile_stage, correct_stage, perf_stage], configs=rows, speedup=mean,
                     speedup_geomean=geo, score=score, elapsed_s=time.monotonic() - start, phases_s=phases,
                     checks=checks,
                     outcome=outcome.decide(compiled=compile_stage.passed, correct=correct_stage.passed,
                                            performance=perf_stage.passed, configs=rows, checks=checks, fault=None))

    def measure_performance(self, gdir: Path, sandbox) -> tuple[Stage, list[dict], list[float] | None]:
        """The performance stage: the candidate's and the baseline's performance commands in alternating rounds.
        Returns (stage, rows, per-case speedups or None where nothing was measured)."""
        if self.hardware.interpreter:
            return Stage("performance", None, [NOT_MEASURED_ON_INTERPRETER]), [], None
        if not self.config.measure:
            return Stage("performance", None, ["not measured (measure=False)"]), [], None
        spec = self.task.spec
        base_dir = self._baseline()
        base_box = self._sandbox(base_dir)
        cand_rounds, base_rounds = [], []
        for _ in range(max(self.rounds, 1)):
            for root, box, out in ((base_dir, base_box, base_rounds), (gdir, sandbox, cand_rounds)):
                who = "baseline" if root == base_dir else "candidate"
                try:
                    for rel in (PERFORMANCE_REPORT, ROCMBENCH_REPORT):  # this round's reports only
                        remove_report(root, rel)
                except ReportError as e:
                    return Stage("performance", False if who == "candidate" else None, [f"{who}: {e}"]), [], None
                run = run_stage(box, root, spec.performance_command, spec.performance_timeout, None)
                if not run.passed:
                    msg = [f"the {who}'s performance command failed:", *run.messages]
                    return Stage("performance", False if who == "candidate" else None, msg), [], None
                cases, error = read_performance_report(root)
                if error:
                    return Stage("performance", False if who == "candidate" else None, [f"{who}: {error}"]), [], None
                out.append(cases)
        rows, ratios, problems = compare_cases(median_times(base_rounds), median_times(cand_rounds))
        if not ratios:
            return Stage("performance", None, ["no case the baseline ran", *problems]), rows, None
        note = (f"{len(ratios)} cases; per case the median of {len(cand_rounds)} rounds, baseline and candidate "
                f"alternating; timed by kernelgym's helpers where the task's files use the AKA-GENERATED block")
        return Stage("performance", not problems, [note, *problems]), rows, ratios

    def _baseline(self) -> Path:
        """The pristine sources in a grading directory of their own, made once per grader."""
        if self._baseline_dir is None or not self._baseline_dir.is_dir():
            d = self._new_dir("baseline")
            problems = prepare_dir(self.task, d)
            if problems:
                shutil.rmtree(d, ignore_errors=True)
                raise PlaceholderError("; ".join(problems))
            self._baseline_dir = d
        return self._baseline_dir
