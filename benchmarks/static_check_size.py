"""Time of the sandboxed static check (kernelgym/grader/static_check.py) by file size, on this machine: the rmsnorm
baseline, plain functions filling 1 and 4 MiB (the editable-file cap), and 1 MB of 98 nested classes (the earlier
check took 390 s on it). Prints a table and writes JSON to --out. No GPU needed.

    python benchmarks/static_check_size.py --out static_check_size.json [--repeat 3]
"""
import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

from kernelgym.discovery import get_task
from kernelgym.grader.files import MAX_EDITABLE_BYTES
from kernelgym.grader.static_check import run_static_check


def filled(base: str, size: int) -> str:
    """`base` followed by plain host functions up to `size` bytes."""
    parts, n, i = [base], len(base), 0
    while True:
        block = f"def f{i}(x):\n    y = x.view(-1)\n    return y.reshape(x.shape)\n\n\n"
        if n + len(block) > size:
            return "".join(parts)
        parts.append(block)
        n, i = n + len(block), i + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="static_check_size.json")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    task = get_task("triton-rmsnorm")
    base = (task.root / "kernel.py").read_text()
    nested = "".join("    " * i + f"class C{i}:\n" for i in range(98)) + "    " * 98 + "x = 1\n"
    cases = {"baseline": base, "1 MiB of functions": filled(base, 1 << 20),
             "4 MiB of functions (the cap)": filled(base, MAX_EDITABLE_BYTES),
             "1 MB of 98 nested classes": base + nested * (1_000_000 // len(nested))}
    out = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cases": {}}
    for name, src in cases.items():
        times, verdict = [], None
        for _ in range(args.repeat):
            r = run_static_check({"kernel.py": src.encode()}, task.spec.entry_point, task.spec.reference,
                                 timeout_s=300)
            times.append(r.elapsed_s)
            verdict = r.error or (f"{len(r.findings)} findings" if r.findings else "passed")
        out["cases"][name] = {"bytes": len(src), "elapsed_s": times, "median_s": statistics.median(times),
                              "verdict": verdict}
        print(f"| {name} | {len(src):,} B | {statistics.median(times):.2f} s | {verdict} |", flush=True)
    out["load_after"] = os.getloadavg()[0]
    Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
