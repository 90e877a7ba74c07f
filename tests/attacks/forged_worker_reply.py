"""Attack: the candidate forges the warm worker's reply. It can write into the worker's stdout through bwrap's pid
1 (/proc/1/fd/1): a line "unprepared ..." (as if the prepared child had died before any candidate code ran, which
makes the parent grade again in a fresh process: a second run, a second look at the inputs), or junk in front of
the real reply to spoil it. Here it also deletes its log and exits early.

Defences: `worker_reply_token` (every reply must end with a random token sent with the request, which the worker
read before any candidate code ran; words are read from the line's end, so junk in front does not spoil a real
reply) and `no_retry_once_started` (the worker says 'started' and waits for the parent's 'go' before the candidate
runs; after that no 'unprepared' is taken, and a result stands whatever the candidate did).
Honest twin: a worker whose prepared child really died before starting is answered 'unprepared', and the parent
may grade elsewhere (the protocol test's second case).
"""
import subprocess
import sys

import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()

RUN_ONCE_THEN_VANISH = BASELINE + '''
import os as _os
_d = _os.path.dirname(_os.path.abspath(__file__))
with open(_os.path.join(_d, "runs.txt"), "a") as _f:
    _f.write("run\\n")
try:  # a forged "unprepared" reply, in the format the worker uses, without the token
    with open("/proc/1/fd/1", "w") as _o:
        _o.write("unprepared 1 0 " + _os.path.join(_d, "request.json") + "\\n")
except OSError:
    pass
_os.unlink(_os.path.join(_d, "harness.log"))
_os._exit(1)
'''


def test_a_candidate_gets_no_second_run(tmp_path, require_bwrap, make_workspace):
    # Deleting its log, exiting early and forging the worker's reply used to buy a second run in a fresh process.
    ws = make_workspace(RUN_ONCE_THEN_VANISH)
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(keep_grading_dirs=True))
    grader.start_worker(seed=4)
    gdir = grader._prepared.gdir
    g = grader.grade(ws, seed=4)
    assert (gdir / "runs.txt").read_text() == "run\n"
    assert g.score == 0.0


FAKE_WORKER = r"""
import sys
cmd, token, path = sys.stdin.readline().rstrip("\n").split(" ", 2)
print("unprepared 0 %s %s" % (token, path) if sys.argv[1] == "unprepared" else "started %s %s" % (token, path), flush=True)
if sys.argv[1] == "unprepared":
    sys.exit()
go = sys.stdin.readline().split()
assert go == ["go", token], go
print("unprepared 0 %s %s" % (token, path), flush=True)  # after 'started': must be ignored
print("X y done 3 %s %s" % (token, path), flush=True)  # junk a candidate put before the reply (no newline)
sys.stdin.readline()
"""


@pytest.mark.parametrize("behaviour,expected", [("started", (3, False, False)), ("unprepared", (0, False, True))])
def test_the_worker_reply_protocol(tmp_path, behaviour, expected):
    # 'unprepared' (a retry in a fresh process) is taken only before the worker said 'started', which it says
    # before any candidate code runs and which we acknowledge with 'go TOKEN'.
    from kernelgym.grader.worker import GraderWorker
    worker = GraderWorker.__new__(GraderWorker)
    worker.proc = subprocess.Popen([sys.executable, "-c", FAKE_WORKER, behaviour], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
    try:
        assert worker.request(tmp_path / "a dir" / "request.json", timeout_s=30) == expected
    finally:
        worker.proc.kill()
        worker.proc.wait()
