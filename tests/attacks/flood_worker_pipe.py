"""Attack: the candidate reaches the worker's stdout through bwrap's pid 1 (/proc/1/fd/1) and writes to it without
a newline, forever, from a background thread: a parent reading lines would wait, and buffer, without end.

Defence: `bounded_reply_read` (the parent reads raw chunks, checks its deadline on each, and keeps at most
MAX_REPLY_BYTES).
Honest twin: the kernel behind the flood is the baseline; the grading ends, well inside the limit.
"""
import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()


@pytest.mark.timeout(180)
def test_flooding_the_worker_pipe_cannot_hang_the_env(tmp_path, require_bwrap, make_workspace):
    # The candidate reaches the worker's stdout through bwrap's pid 1 and writes without a newline, forever.
    src = BASELINE + '''
import threading as _t
def _flood():
    with open("/proc/1/fd/1", "w") as f:
        while True:
            f.write("x" * 65536)
            f.flush()
_t.Thread(target=_flood, daemon=True).start()
'''
    ws = make_workspace(src)
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(timeout_s=20.0))
    grader.start_worker(seed=0)  # the prepared path, as the env uses it
    g = grader.grade(ws, seed=0)
    assert g.elapsed_s < 60 and g.score <= 120.0
