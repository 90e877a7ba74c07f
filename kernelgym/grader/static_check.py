"""Runs the static provenance check (provenance.py) in a sandboxed process of its own, under a time limit.

The check reads the candidate's files and never runs them, but a parser and a tree walk over hostile input are still
work a candidate chooses: the trusted process does neither. The files go to a fresh directory as JSON, a bwrap sandbox
(no network, read-only system, only that directory writable) runs ``python -I -S provenance.py IN OUT`` under
`Limits` (wall time, memory, processes), and the result comes back as JSON read with a size cap. A check that runs
past its limit, dies or writes no result fails the compile gate, saying so.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernelgym.grader.untrusted import read_untrusted
from kernelgym.sandbox import PYTHON, Limits, make_sandbox

HERE = Path(__file__).resolve().parent
#: The files the check's process loads (by path: it imports no kernelgym).
CHECK_FILES = (HERE / "provenance.py", HERE / "allowed_names.py")
#: The largest result read back (a file full of refused lines yields many findings).
MAX_RESULT_BYTES = 8 << 20
#: Findings kept per grading: the first ones say what is wrong; thousands more say nothing new.
MAX_FINDINGS = 200


@dataclass
class StaticCheck:
    """What the static check said of one submission.

    Attributes:
        source_errors: files that cannot be judged (a NUL byte, not UTF-8, over the cap): they fail compile.
        findings: refused uses (``file:line: what [rule]``): they fail correctness.
        error: why the check itself gave no verdict (past its time limit, killed, no result): fails compile.
        elapsed_s: wall time of the check's process, s.
    """

    source_errors: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    error: str | None = None
    elapsed_s: float = 0.0

    @property
    def compile_problems(self) -> list[str]:
        """The messages that fail the compile gate (empty when the files could be judged)."""
        return [*self.source_errors, *([self.error] if self.error else [])]


def run_static_check(files: dict[str, bytes], entry_point: str, reference: str, *, sandbox: str = "bwrap",
                     timeout_s: float = 60.0, max_bytes: int = 4 << 20, memory_bytes: int = 4 << 30,
                     work_root: Path | None = None) -> StaticCheck:
    """Run the static check over the editable `files` ({relative path: raw bytes}) in a sandbox.

    Args:
        files: the candidate's editable files, as copied into the grading directory (Python and C++/CUDA).
        entry_point: ``file.py:function`` of the task. reference: the task's ``file.py:function``.
        sandbox: ``"bwrap"`` or ``"none"`` (as the grader's own setting).
        timeout_s: wall-clock limit of the check, s; past it the check is killed and the submission fails compile.
        max_bytes: a file larger than this fails compile (`provenance.source_errors`).
        memory_bytes: address-space limit of the check's process, bytes.
        work_root: where the check's private directory is made (default: the system's temporary directory).

    Returns:
        A `StaticCheck`; never raises for anything in the files.

    Raises:
        SandboxUnavailableError: bubblewrap was asked for and cannot run here.
    """
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="kernelgym-static-", dir=work_root))
    try:
        request = {"files": {rel: data.decode("latin-1") for rel, data in files.items()},
                   "entry_point": entry_point, "reference": reference, "max_bytes": max_bytes}
        (tmp / "in.json").write_text(json.dumps(request))
        box = make_sandbox(sandbox, tmp, readonly=list(CHECK_FILES), gpu=False)
        run = box.run([PYTHON, "-I", "-S", str(CHECK_FILES[0]), str(tmp / "in.json"), str(tmp / "out.json")],
                      limits=Limits(timeout_s=timeout_s, memory_bytes=memory_bytes, max_output_bytes=4000,
                                    max_file_bytes=MAX_RESULT_BYTES, pids_max=16))
        elapsed = time.monotonic() - start
        if run.timed_out:
            return StaticCheck(error=f"the static check ran past its limit of {timeout_s:g} s and was killed (a "
                                     f"kernel file needs no such size or nesting)", elapsed_s=elapsed)
        try:
            result = json.loads(read_untrusted(tmp / "out.json", MAX_RESULT_BYTES))
            errors = [finding_line(f) for f in result["source_errors"]]
            findings = [finding_line(f) for f in result["findings"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return StaticCheck(error=f"the static check gave no result (exit code {run.returncode}: "
                                     f"{run.output.strip()[-500:] or type(exc).__name__})", elapsed_s=elapsed)
        if len(findings) > MAX_FINDINGS:
            findings = [*findings[:MAX_FINDINGS], f"... and {len(findings) - MAX_FINDINGS} more findings"]
        return StaticCheck(source_errors=errors, findings=findings, elapsed_s=elapsed)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def finding_line(f: dict) -> str:
    """``file:line: what [rule]`` of one finding dict of the check's result (`provenance.check_files`)."""
    return f"{f['file']}:{int(f['line'])}: {f['what']}" + (f" [{f['rule']}]" if f.get("rule") else "")
