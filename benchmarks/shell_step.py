"""Cost of one sandboxed shell step (`BubblewrapSandbox.run("true")`, every limit in place) against a plain
subprocess, on this machine.

    python benchmarks/shell_step.py [--n 200] [--no-cgroup] [--profile]

Steps and plain subprocesses alternate, so both see the same load; the load average before and after is printed
(other work on the machine inflates the numbers: compare runs at the same load). On a shared machine, ``chrt -f 10
python benchmarks/shell_step.py`` (root) runs the benchmark and its sandboxes ahead of other work, with the kernel's
own threads still competing; the scheduling policy is printed. The CPU time per step does not depend on the load.
``--profile`` also times the parts of a step one by one (hand-over, the command line, the cgroup, bwrap alone, bwrap
without the user drop).
"""
import argparse
import os
import platform
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from kernelgym import cgroups
from kernelgym.sandbox import BubblewrapSandbox, Limits, run_limited, sandbox_user


def _stats(xs: list[float]) -> str:
    xs = sorted(xs)
    return f"median {statistics.median(xs) * 1e3:.1f} ms, p90 {xs[int(0.9 * len(xs))] * 1e3:.1f} ms"


def _time(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--no-cgroup", action="store_true", help="pids_max=None: no cgroup per command")
    ap.add_argument("--profile", action="store_true", help="also time the parts of a step")
    args = ap.parse_args()
    box = BubblewrapSandbox(Path(tempfile.mkdtemp()), limits=Limits(pids_max=None if args.no_cgroup else 1024))
    bwrap_version = subprocess.run([box.bwrap, "--version"], capture_output=True, text=True).stdout.strip()
    for _ in range(5):
        box.run("true")
    load_before = os.getloadavg()
    steps, plain, cpu = [], [], 0.0
    for _ in range(args.n):
        before = _cpu()
        steps += _time(lambda: box.run("true"), 1)
        cpu += _cpu() - before
        plain += _time(lambda: subprocess.run(["true"]), 1)
    load_after = os.getloadavg()
    why = cgroups.unavailable_reason()
    user = sandbox_user()
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, kernel {platform.release()}, "
          f"{bwrap_version}; date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"sandbox user: {'uid %d (kernelgym runs as root)' % user[0] if user else 'kernelgym own uid %d' % os.getuid()}"
          f"; cgroup {'off' if args.no_cgroup else ('on' if why is None else 'unavailable: ' + why)}; load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after; scheduling "
          f"{'SCHED_FIFO' if os.sched_getscheduler(0) == os.SCHED_FIFO else 'normal'}")
    print(f"sandboxed shell step: {_stats(steps)} (n={args.n}); plain subprocess: {_stats(plain)}; CPU time per step "
          f"(this process and its reaped children; the sandbox's pid 1 and the kernel's work elsewhere not counted): "
          f"{cpu / args.n * 1e3:.1f} ms")
    if args.profile:
        n = max(args.n // 4, 20)
        argv = box.argv(["/bin/sh", "-c", "true"])
        env = box._env(None)
        start = argv.index("--")
        no_drop = argv[:start + 1] + ["/bin/sh", "-c", "true"]
        parts = {
            "hand-over of the workspace": lambda: box._hand_over(),
            "command line (argv)": lambda: box.argv(["/bin/sh", "-c", "true"]),
            "cgroup create + limits read + destroy": lambda: _cgroup_cycle(),
            "run_limited (no hand-over, no argv build)": lambda: run_limited(argv, env=env, cwd=box.workspace,
                                                                              limits=box.limits, bwrap=True),
            "bwrap alone (subprocess.run, no limits)": lambda: subprocess.run(argv, env=env, cwd=box.workspace,
                                                                               stdout=subprocess.DEVNULL),
            "bwrap alone without the user drop": lambda: subprocess.run(no_drop, env=env, cwd=box.workspace,
                                                                         stdout=subprocess.DEVNULL),
        }
        for name, fn in parts.items():
            print(f"  {name}: {_stats(_time(fn, n))}")


def _cpu() -> float:
    """CPU seconds used so far by this process and its reaped children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _cgroup_cycle():
    group = cgroups.SandboxCgroup.create(1024, 16 << 30)
    if group is not None:
        group.hit_limits()
        group.destroy()


if __name__ == "__main__":
    main()
