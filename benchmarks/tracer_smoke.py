"""Builds the observer's kernel tracer (kernelgym/grader/tracer.py) and traces a small PyTorch + Triton process with
it: outside any sandbox, two at once, and inside the grader's sandbox; prints the kernels recorded and where the
time goes (start to flush, flush to exit).

    python benchmarks/tracer_smoke.py
"""
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernelgym.grader import tracer
from kernelgym.sandbox import PYTHON, Limits, make_sandbox

CHILD = r'''
import ctypes, os, sys, time
t0 = time.monotonic()
import torch, triton, triton.language as tl
@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) + 1, mask=i < n)
x = torch.zeros(1 << 20, device="cuda")
t1 = time.monotonic()
torch.cuda._sleep(1)
add_one[(x.numel() // 1024,)](x, x.numel(), BLOCK=1024)
y = x.sum(); z = torch.ones(64 << 20, device="cuda").sum()
a = torch.randn(512, 512, device="cuda"); b = a @ a
torch.cuda._sleep(1); torch.cuda.synchronize()
t2 = time.monotonic()
if os.environ.get("CUDA_INJECTION64_PATH"):
    f = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).kernelgym_trace_flush; f.restype = ctypes.c_ulonglong
    n = f()
else:
    n = -1
print(f"import+cuda {t1 - t0:.2f} s, kernels {t2 - t1:.2f} s, flush {time.monotonic() - t2:.3f} s, records {n}",
      flush=True)
print("FLUSHED", time.time(), flush=True)
'''


def run_child(argv, env, label):
    t = time.monotonic()
    run = subprocess.run(argv, env=env, capture_output=True, text=True)
    end = time.time()
    flushed = [float(line.split()[1]) for line in run.stdout.splitlines() if line.startswith("FLUSHED")]
    exit_s = f"{end - flushed[0]:.2f}" if flushed else "?"
    print(f"{label}: exit {run.returncode}, {time.monotonic() - t:.2f} s, flush-to-exit {exit_s} s; "
          f"{run.stdout.strip()[:300]} {run.stderr.strip()[-1500:]}", flush=True)


def show(out):
    for path in sorted(out.iterdir()):
        if path.name.startswith(tracer.TRACE_PREFIX):
            print(path.name, "\n" + path.read_text()[:3000], flush=True)
    try:
        for k in tracer.parse_trace(out, Path.read_bytes):
            print(f"{k.duration_ns / 1e3:9.2f} us  {k.name[:150]}")
    except Exception as e:  # noqa: BLE001
        print("parse_trace:", e)


def main():
    t = time.monotonic()
    lib = tracer.build()
    print(f"built {lib} in {time.monotonic() - t:.2f} s (CUPTI {tracer.find_cupti()})", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="kg-trace-"))
    child = scratch / "child.py"
    child.write_text(CHILD)
    run_child([sys.executable, str(child)], os.environ, "without tracer")
    out = scratch / "one"
    out.mkdir()
    run_child([sys.executable, str(child)], {**os.environ, **tracer.env(lib, out)}, "with tracer")
    show(out)
    two = [scratch / "a", scratch / "b"]
    procs = []
    for d in two:
        d.mkdir()
        procs.append(subprocess.Popen([sys.executable, str(child)], env={**os.environ, **tracer.env(lib, d)},
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for d, p in zip(two, procs):
        print(f"concurrent {d.name}: exit {p.wait()}: {p.stdout.read()[-800:]}", flush=True)
        print("  files:", sorted(x.name for x in d.iterdir()), flush=True)
    box = scratch / "box"
    box.mkdir()
    sandbox = make_sandbox("bwrap", box, readonly=[lib, child], gpu=True, env=tracer.env(lib, box))
    t = time.monotonic()
    res = sandbox.run([PYTHON, str(child)], limits=Limits(timeout_s=120, max_output_bytes=8000))
    print(f"in the sandbox: exit {res.returncode}, {time.monotonic() - t:.2f} s: {res.output[-1500:]}", flush=True)
    show(box)


if __name__ == "__main__":
    main()
