"""Probe (H200): can Nsight Compute observe a process inside the bubblewrap sandbox, from outside it or inside it,
and what does it cost? Prints the kernels each variant saw and its wall time.

    python benchmarks/observer_probe.py
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernelgym.sandbox import BubblewrapSandbox

APP = r'''
import torch, triton, triton.language as tl
@triton.jit
def probe_own_kernel(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)
x = torch.randn(4096, device="cuda")
torch.cuda._sleep(1)
y = torch.empty_like(x)
probe_own_kernel[(4,)](x, y, 4096, B=1024)
z = x * 2
w = torch.zeros(10, device="cuda")
torch.cuda._sleep(1)
torch.cuda.synchronize()
print("app done", flush=True)
'''


def main():
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    print("ncu:", ncu, subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip()[-80:])
    work = Path(tempfile.mkdtemp())
    (work / "app.py").write_text(APP)
    box = BubblewrapSandbox(work, gpu=True)
    env = box._env(None)
    opts = ["--csv", "--metrics", "gpu__time_duration.sum", "--clock-control", "none", "--target-processes", "all"]
    app = [sys.executable, str(work / "app.py")]
    # Seen on 2026-12-01: ncu outside bwrap never connects to the process inside (no shared network or IPC
    # namespace) and hangs until killed; so only the variants that can work are run.
    variants = {
        "plain, no ncu": box.argv(app),
        "ncu inside bwrap": box.argv([ncu, *opts, *app]),
        "ncu inside bwrap, again": box.argv([ncu, *opts, *app]),
    }
    for name, argv in variants.items():
        t = time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env} if "no sandbox" in name else env,
                           cwd=work, timeout=90)
        dt = time.monotonic() - t
        kernels = [line.split('","')[4] for line in r.stdout.splitlines() if line.startswith('"') and "gpu__time_duration" in line]
        print(f"== {name}: exit {r.returncode}, {dt:.2f} s, {len(kernels)} kernels")
        for k in kernels:
            print("   ", k[:150])
        if r.returncode or not kernels:
            print("   stdout tail:", r.stdout[-1500:])
            print("   stderr tail:", r.stderr[-1500:])


if __name__ == "__main__":
    main()
