"""Cost of one sandboxed shell step (`BubblewrapSandbox.run("true")`) against a plain subprocess, on this machine.

    python benchmarks/shell_step.py [--n 100] [--no-cgroup]
"""
import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from kernelgym import cgroups
from kernelgym.sandbox import BubblewrapSandbox, Limits


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--no-cgroup", action="store_true", help="pids_max=None: no cgroup per command")
    args = ap.parse_args()
    box = BubblewrapSandbox(Path(tempfile.mkdtemp()), limits=Limits(pids_max=None if args.no_cgroup else 1024))
    for _ in range(5):
        box.run("true")
    steps, plain = [], []
    for _ in range(args.n):
        t = time.perf_counter()
        box.run("true")
        steps.append(time.perf_counter() - t)
        t = time.perf_counter()
        subprocess.run(["true"])
        plain.append(time.perf_counter() - t)
    why = cgroups.unavailable_reason()
    print(f"sandboxed shell step: median {statistics.median(steps) * 1e3:.1f} ms, p90 "
          f"{sorted(steps)[int(0.9 * len(steps))] * 1e3:.1f} ms (n={args.n}; cgroup "
          f"{'off' if args.no_cgroup else ('on' if why is None else 'unavailable: ' + why)}); plain subprocess median "
          f"{statistics.median(plain) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
