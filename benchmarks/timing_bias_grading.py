"""Self-speedup bias (benchmarks/results/README.md, (a)): replay a grading's steps in one process, no sandbox, on
a GPU, under timing settings that may matter, and see which makes the candidate read slower than the baseline
it is a copy of. Writes JSON to --out.

Each repetition, per variant: harness.prepare (baseline graphs first), harness.check with the candidate (a copy
of the baseline in another directory, as graded), then the timing of every config with harness.time_pair, as a
real grading does. Per-config speedups from the interquartile means the grader uses; ideal: 1.

- ``float32 flush``: as the harness times;
- ``int32 flush``: the flush read by an int32 sum (362 us; the harness before 2026-11-29 14:20);
- ``recaptured``: the baseline's graph captured again right before the candidate's;
- ``no check``: the candidate not run by harness.check before it is timed.

Run 3 of 2026-11-29 (results/2026-11-29-h200-bias-grading-run3.json, commit ebebce9) also had variants with a GPU
spin of 100,000 cycles between the flush and each run (GraderConfig.settle_cycles then, since removed: no effect,
here or in real gradings).

It also times the flush alone: the float32 sum the harness uses and the int32 one, in us per call.

    python benchmarks/timing_bias_grading.py --n 10 --out bias_grading.json
"""
import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import torch

from kernelgym.grader.timing_stats import interquartile_mean
from kernelgym.hardware import detect_profile
from kernelgym.discovery import get_task

from timing_bias import load_harness  # benchmarks/ is the working directory's script folder

VARIANTS = {  # name: (flush dtype, recapture the baseline, run check first)
    "float32 flush": (torch.float32, False, True), "int32 flush": (torch.int32, False, True),
    "recaptured": (torch.float32, True, True), "no check": (torch.float32, False, False)}


def request(task, hw, directory, work, seed):
    n = len(task.spec.seen_configs)
    return {"mode": "grade", "directory": str(directory), "builder_directory": str(task.root),
            "baseline_directory": str(task.root), "entry_point": task.spec.entry_point,
            "input_builder": task.spec.input_builder, "configs": task.spec.seen_configs, "seed": seed,
            "device": "cuda", "warmup": 10, "reps": 100, "rounds": 10, "input_sets": 4,
            "flush_bytes": hw.flush_bytes, "require_triton_launch": True, "outputs": str(work / "o.pt"),
            "timed_outputs": [str(work / f"t{i}.pt") for i in range(n)]}


def flush_cost(hw):
    """GPU time per call of the flush read, us: float32 sum (the harness) and int32 sum."""
    out = {}
    for name, dtype in (("float32 sum (harness)", torch.float32), ("int32 sum", torch.int32)):
        buf = torch.ones(hw.flush_bytes // 4, dtype=dtype, device="cuda")
        for _ in range(3):
            buf.sum()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(50):
            buf.sum()
        e.record()
        torch.cuda.synchronize()
        out[name] = s.elapsed_time(e) / 50 * 1000
        del buf
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--out", default="timing_bias_grading.json")
    args = ap.parse_args()
    H, task, hw = load_harness(), get_task("triton-rmsnorm"), detect_profile()
    copy, work = Path(tempfile.mkdtemp(prefix="kg-copy-")), Path(tempfile.mkdtemp(prefix="kg-work-"))
    for rel in task.public_files():
        shutil.copy(task.root / rel, copy / rel)
    cand = H.load(task.spec.entry_point, str(copy), "kg_cand")
    out = {"machine": hw.name, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "n": args.n, "rows": []}
    for rep in range(args.n):
        for variant, (flush_dtype, recapture, check) in VARIANTS.items():
            req = request(task, hw, copy, work, seed=rep)
            state = H.prepare(req)
            state.flush = torch.ones(hw.flush_bytes // 4, dtype=flush_dtype, device="cuda")
            if check:
                H.check(req, cand, state.check_inputs)
            for cfg, pool, static, graph_pool, base in state.timing:
                if recapture:
                    base = H.Timed(base.fn, static, req["warmup"], graph_pool)
                    base.out = None
                c = H.Timed(cand, static, req["warmup"], graph_pool)
                times, _ = H.time_pair(base, c, pool, state.flush, 100, 10, state.reset_l2)
                out["rows"].append({"variant": variant, "rep": rep, "config": cfg,
                                    "speedup": interquartile_mean(times["baseline"]) / interquartile_mean(times["candidate"])})
            del state
        print(f"rep {rep + 1}/{args.n}", flush=True)
    summary = {}
    for variant in VARIANTS:
        for cfg in task.spec.seen_configs:
            xs = [r["speedup"] for r in out["rows"] if r["variant"] == variant and r["config"] == cfg]
            summary[f"{variant} {cfg['rows']}x{cfg['hidden']}"] = {
                "mean": statistics.fmean(xs), "stdev": statistics.stdev(xs) if len(xs) > 1 else 0.0,
                "min": min(xs), "max": max(xs)}
    out["summary"] = summary
    out["flush_us_per_call"] = flush_cost(hw)
    Path(args.out).write_text(json.dumps(out, indent=1))
    for k, v in summary.items():
        print(f"{k:28s} mean {v['mean']:.4f} sd {v['stdev']:.4f} [{v['min']:.4f}, {v['max']:.4f}]")
    print("flush:", {k: round(v, 1) for k, v in out["flush_us_per_call"].items()}, "us per call")


if __name__ == "__main__":
    main()
