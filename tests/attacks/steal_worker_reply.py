"""Attack: the candidate leaves processes behind (double-forked, in their own session) that read the worker's
reply, token included, from /proc/1/fd/1, swallow it, and then forge 'unprepared' with the stolen token, again and
again, to be run a second time.

Defence: `kill_others_before_reply` (before each reply the worker kills every other process in its pid namespace
and waits until none can run user code; the reply is one write).
Honest twin: the kernel behind the readers is the baseline: graded 120, once, without waiting for a timeout.
"""
import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()

STEAL_THE_REPLY = """
import os as _os, time as _time
_D = _os.path.dirname(_os.path.abspath(__file__))
with open(_os.path.join(_D, "runs.txt"), "a") as _f:
    _f.write("run\\n")
for _k in range(4):  # leftover readers on the worker's reply pipe, forging 'unprepared' with the stolen token
    if _os.fork() == 0:
        if _os.fork() == 0:
            _os.setsid()
            try:  # started by root, pid 1 is root's: its descriptors are out of the sandbox user's reach
                _r, _buf = _os.open("/proc/1/fd/1", _os.O_RDONLY), b""
            except OSError:
                _os._exit(0)
            while True:
                _c = _os.read(_r, 65536)
                if not _c:
                    _os._exit(0)
                _buf += _c
                _p = _buf.split(b"\\n")[0].split(b" ", 3)
                if len(_p) == 4 and _p[0] == b"done":
                    _w = _os.open("/proc/1/fd/1", _os.O_WRONLY)
                    for _ in range(100):
                        _os.write(_w, b"unprepared " + _p[1] + b" " + _p[2] + b" " + _p[3] + b"\\n")
                        _time.sleep(0.002)
                    _os._exit(0)
        _os._exit(0)
    _os.wait()
""" + BASELINE


@pytest.mark.timeout(300)
def test_leftover_processes_cannot_steal_or_forge_the_workers_reply(tmp_path, require_bwrap, make_workspace):
    ws = make_workspace(STEAL_THE_REPLY)
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(timeout_s=60.0, static_check=False, keep_grading_dirs=True))
    grader.start_worker(seed=5)
    gdir = grader._prepared.gdir
    g = grader.grade(ws, seed=5)
    assert (gdir / "runs.txt").read_text() == "run\n"  # one run: no forged 'unprepared' was taken
    assert g.score == 120.0 and g.elapsed_s < 50  # graded as the baseline it is, without waiting for a timeout
