"""Where does a kernel's self-speedup bias come from? One process, no sandbox, on a GPU; writes JSON to --out.

The rmsnorm baseline is timed against a second copy of itself (loaded from another directory, as the harness
loads a candidate) with harness.time_pair, N times per config, in two arrangements:

- ``separate``: each kernel has its own static input buffers and its own graph memory (the harness before
  2026-11-29 afternoon);
- ``shared``: both read the same static input buffers and their graphs share one memory pool, so the outputs
  land at the same address too (the harness now).

For each, the speedup is computed from the same runs with two estimators: ratio of medians, and ratio of
interquartile means (what the grader reports now). Ideal: every speedup 1.

    python benchmarks/timing_bias.py --n 10 --out bias.json
"""
import argparse
import importlib.util
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import torch

from kernelgym.grader.grader import HARNESS
from kernelgym.grader.timing_stats import interquartile_mean
from kernelgym.hardware import detect_profile
from kernelgym.discovery import get_task


def load_harness():
    spec = importlib.util.spec_from_file_location("kg_harness", HARNESS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--out", default="timing_bias.json")
    args = ap.parse_args()
    H, task, hw = load_harness(), get_task("triton-rmsnorm"), detect_profile()
    copy = Path(tempfile.mkdtemp(prefix="kg-copy-"))
    for rel in task.public_files():
        shutil.copy(task.root / rel, copy / rel)
    base_fn = H.load(task.spec.entry_point, str(task.root), "kg_base")
    cand_fn = H.load(task.spec.entry_point, str(copy), "kg_cand")
    builder = H.load(task.spec.input_builder, str(task.root), "kg_inputs")
    flush = torch.ones(hw.flush_bytes // 4, dtype=torch.float32, device="cuda")  # as the harness
    reset = H._persisting_l2_reset()
    gen = torch.Generator(device="cuda").manual_seed(0)
    out = {"machine": hw.name, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "n": args.n, "rows": []}
    for rep in range(args.n):
        for cfg in task.spec.seen_configs:
            verify = builder(cfg, 1000 + rep, "cuda")
            pool = [verify] + [tuple(H._perturb(a, gen) for a in verify) for _ in range(3)]
            row = {"config": cfg, "rep": rep}
            for arrangement in ("separate", "shared"):
                if arrangement == "separate":
                    base = H.Timed(base_fn, tuple(H._clone(a) for a in verify), 10)
                    cand = H.Timed(cand_fn, tuple(H._clone(a) for a in verify), 10)
                else:
                    static, gp = tuple(H._clone(a) for a in verify), torch.cuda.graph_pool_handle()
                    base = H.Timed(base_fn, static, 10, gp)
                    base.out = None
                    cand = H.Timed(cand_fn, static, 10, gp)
                t, _ = H.time_pair(base, cand, pool, flush, 100, 10, reset)
                row[arrangement] = {
                    "median": statistics.median(t["baseline"]) / statistics.median(t["candidate"]),
                    "iqm": interquartile_mean(t["baseline"]) / interquartile_mean(t["candidate"]),
                    "baseline_iqm_ms": interquartile_mean(t["baseline"]),
                    "tick_ns": min((abs(a - b) * 1e6 for a, b in zip(t["baseline"], t["baseline"][1:]) if a != b),
                                   default=None)}
                del base, cand
            out["rows"].append(row)
        print(f"rep {rep + 1}/{args.n}", flush=True)
    summary = {}
    for cfg in task.spec.seen_configs:
        rows = [r for r in out["rows"] if r["config"] == cfg]
        for arrangement in ("separate", "shared"):
            for est in ("median", "iqm"):
                xs = [r[arrangement][est] for r in rows]
                summary[f"{cfg['rows']}x{cfg['hidden']} {arrangement} {est}"] = {
                    "mean": statistics.fmean(xs), "median_abs_dev": statistics.median(abs(x - 1) for x in xs),
                    "min": min(xs), "max": max(xs)}
    out["summary"] = summary
    out["tick_ns_min"] = min(r[a]["tick_ns"] for r in out["rows"] for a in ("separate", "shared") if r[a]["tick_ns"])
    Path(args.out).write_text(json.dumps(out, indent=1))
    for k, v in summary.items():
        print(f"{k:40s} mean {v['mean']:.4f}  median|dev| {v['median_abs_dev'] * 100:.2f}%  "
              f"[{v['min']:.4f}, {v['max']:.4f}]")
    print("smallest step between event times:", out["tick_ns_min"], "ns")


if __name__ == "__main__":
    main()
