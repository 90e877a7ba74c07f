"""Profile your kernel on one seen config and print what a kernel engineer reads first.

    python profile.py [--config N]

GPU: per-kernel device times from torch.profiler (10 calls after warm-up), then, where Nsight Compute (`ncu`,
NVIDIA) or `rocprofv3`/`rocprof` (AMD) is installed, key hardware counters of one call. On the CPU
interpreter there is nothing meaningful to profile, and it says so.
"""
import argparse
import csv
import glob
import io
import os
import shutil
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernelgym_entry import entry, load, spec  # noqa: E402
NCU_METRICS = ["gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
               "sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm__warps_active.avg.pct_of_peak_sustained_active",
               "launch__registers_per_thread", "launch__grid_size", "launch__block_size"]


def find(tool):
    cands = [shutil.which(tool)] + sorted(glob.glob(f"/usr/local/cuda*/bin/{tool}")) + sorted(glob.glob(f"/opt/*/bin/{tool}"))
    return next((c for c in cands if c and os.access(c, os.X_OK)), None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", type=int, default=0)
    ap.add_argument("--once", action="store_true", help="(internal) one call, for the hardware profiler")
    args = ap.parse_args()
    configs = spec["configs"]
    if not 0 <= args.config < len(configs):
        sys.exit(f"error: --config must be in 0..{len(configs) - 1}")
    cfg = configs[args.config]
    if spec["interpreter"]:
        print(f"profile of config {args.config} {cfg}: not available on the CPU interpreter (no GPU; the "
              "interpreter's timings mean nothing). Use check.py for correctness.")
        return
    fn, builder = entry(), load(spec["input_builder"])
    inputs = builder(cfg, 4321, "cuda")
    for _ in range(3):
        fn(*inputs)
    torch.cuda.synchronize()
    if args.once:
        fn(*inputs)
        torch.cuda.synchronize()
        return
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            fn(*inputs)
        torch.cuda.synchronize()
    print(f"== device time per kernel, config {args.config} {cfg}, 10 calls (torch.profiler)")
    print(prof.key_averages().table(sort_by="device_time_total", row_limit=12, max_name_column_width=60))
    ncu, rocprof = find("ncu"), find("rocprofv3") or find("rocprof")
    if ncu:
        cmd = [ncu, "--clock-control", "none", "--metrics", ",".join(NCU_METRICS), "--csv", "--page", "raw",
               "-k", "regex:^(?!.*(elementwise|fill|copy)).*", sys.executable, __file__, "--config", str(args.config), "--once"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        rows = [row for row in csv.DictReader(io.StringIO("\n".join(
            line for line in r.stdout.splitlines() if line.startswith('"'))))]
        if not rows:
            print(f"== ncu gave no counters (exit {r.returncode}): {(r.stderr or r.stdout)[-800:]}")
        print("== Nsight Compute counters, one call")
        labels = {"gpu__time_duration.sum": "duration_ns", "dram__throughput.avg.pct_of_peak_sustained_elapsed":
                  "dram_throughput_%_of_peak", "sm__throughput.avg.pct_of_peak_sustained_elapsed":
                  "sm_throughput_%_of_peak", "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_%",
                  "launch__registers_per_thread": "registers_per_thread", "launch__grid_size": "grid_size",
                  "launch__block_size": "block_size"}
        for row in rows[1:][-6:]:  # rows[0] holds the units
            print(f"{row.get('Kernel Name', '?')[:50]}: " + ", ".join(f"{labels[m]}={row.get(m, '?')}" for m in NCU_METRICS))
    elif rocprof:
        r = subprocess.run([rocprof, "--stats", sys.executable, __file__, "--config", str(args.config), "--once"],
                           capture_output=True, text=True, timeout=300)
        print("== rocprof (AMD; untested here: no AMD GPU was available to the developers)")
        print(r.stdout[-3000:])
    else:
        print("== no hardware profiler (ncu / rocprof) found: counters not available")


if __name__ == "__main__":
    main()
