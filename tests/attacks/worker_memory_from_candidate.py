"""Attack: the candidate runs in a child forked by the warm worker (same uid in the sandbox) and opens the worker's
memory, /proc/<worker>/mem, to read the parent's tokens or rewrite how the worker serves later requests. Here it
only opens the file read-write and says whether it could.

Defence: `worker_not_dumpable` (the worker makes itself non-dumpable at start; with every capability dropped no
process in the sandbox may open its memory). A dumpable parent's memory does open in the same sandbox (checked
when this test was written); ptrace is refused on top (`seccomp_process_access`).
Honest twin: the kernel behind the probe is the baseline, graded 120.
"""
from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()

OPEN_WORKER_MEMORY = BASELINE + '''
import os as _os
_d = _os.path.dirname(_os.path.abspath(__file__))
_ppid = _os.getppid()
with open(f"/proc/{_ppid}/cmdline", "rb") as _f:
    _parent = _f.read().replace(b"\\0", b" ").decode()
try:
    open(f"/proc/{_ppid}/mem", "r+b", buffering=0).close()
    _what = "opened"
except OSError as _e:
    _what = f"refused {_e.errno}"
with open(_os.path.join(_d, "probe.txt"), "w") as _f:
    _f.write(f"{_what}\\n{_parent}\\n")
'''


def test_the_candidate_cannot_open_the_workers_memory(tmp_path, require_bwrap, make_workspace):
    ws = make_workspace(OPEN_WORKER_MEMORY)
    # The probe reads /proc and opens files by name: the static check would refuse it before it runs.
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(static_check=False, keep_grading_dirs=True))
    grader.start_worker(seed=2)  # the prepared path: the candidate runs in a child the worker forked
    gdir = grader._prepared.gdir
    g = grader.grade(ws, seed=2)
    what, parent = (gdir / "probe.txt").read_text().splitlines()[:2]
    assert "--serve" in parent, parent  # the probe looked at the worker
    assert what.startswith("refused"), what
    assert g.score == 120.0, g.summary()
