"""Next step on the self-speedup bias (benchmarks/results/README.md, (a)): replay a grading's sequence in one
process, no sandbox, on a GPU, and see which step makes the candidate read slower. Writes JSON to --out.

Variants, N repetitions each, the rmsnorm baseline against itself, per-config speedups from the interquartile
means the grader uses:

- ``as-graded``: harness.prepare (baseline graphs first), harness.check with the candidate (a copy of the
  baseline in another directory, as graded), then harness.run_timing, as a real grading does;
- ``no-check``: the same without the correctness run before timing;
- ``same-module``: the candidate is the baseline's own function object (no second module, no second compile);
- ``swapped``: as graded, but the candidate passed to time_pair in the baseline's place and vice versa (a bias
  that follows the argument position flips);
- ``recaptured``: as graded, but the baseline's graph captured again right before the candidate's (a bias that
  follows "captured at prepare, long before" goes away).

It also times the cache flush alone (the per-run overhead of the timing loop): the int32 sum the harness uses
and a float32 sum, in us per call.

    python benchmarks/timing_bias_grading.py --n 10 --out bias_grading.json
"""
import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from kernelgym.grader.timing_stats import interquartile_mean
from kernelgym.hardware import detect_profile
from kernelgym.task import get_task

from timing_bias import load_harness  # benchmarks/ is the working directory's script folder


def request(task, hw, directory, work, seed):
    n = len(task.spec.seen_configs)
    return {"mode": "grade", "directory": str(directory), "builder_directory": str(task.root),
            "baseline_directory": str(task.root), "entry_point": task.spec.entry_point,
            "input_builder": task.spec.input_builder, "configs": task.spec.seen_configs, "seed": seed,
            "device": "cuda", "warmup": 10, "reps": 100, "rounds": 10, "input_sets": 4,
            "flush_bytes": hw.flush_bytes, "require_triton_launch": True, "outputs": str(work / "o.pt"),
            "timed_outputs": [str(work / f"t{i}.pt") for i in range(n)]}


VARIANTS = ("as-graded", "no-check", "same-module", "swapped", "recaptured")


def variant_timing(H, req, state, cand_fn, variant):
    """run_timing's timing part, with the baseline and candidate swapped in time_pair or the baseline recaptured."""
    configs = []
    for cfg, pool, static, graph_pool, base in state.timing:
        if variant == "recaptured":
            base = H.Timed(base.fn, static, req["warmup"], graph_pool)
            base.out = None
        cand = H.Timed(cand_fn, static, req["warmup"], graph_pool)
        if variant == "swapped":
            times, _ = H.time_pair(cand, base, pool, state.flush, req["reps"], req["rounds"], state.reset_l2)
            times = {"baseline": times["candidate"], "candidate": times["baseline"]}
        else:
            times, _ = H.time_pair(base, cand, pool, state.flush, req["reps"], req["rounds"], state.reset_l2)
        configs.append({"config": cfg, "ok": True, "baseline_runs_ms": times["baseline"],
                        "candidate_runs_ms": times["candidate"]})
    return {"configs": configs}


def flush_cost(hw):
    """GPU time per call of the flush read: us for the harness's int32 sum and for a float32 sum."""
    import torch
    out = {}
    for name, dtype in (("int32 sum (harness)", torch.int32), ("float32 sum", torch.float32)):
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
    cand_copy = H.load(task.spec.entry_point, str(copy), "kg_cand")
    out = {"machine": hw.name, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "n": args.n, "rows": []}
    for rep in range(args.n):
        for variant in VARIANTS:
            req = request(task, hw, copy, work, seed=rep)
            state = H.prepare(req)
            # same-module: the very function object the baseline's graphs were captured from
            cand = next(t[4].fn for t in state.timing if not isinstance(t[4], str)) if variant == "same-module" \
                else cand_copy
            if variant != "no-check":
                H.check(req, cand, state.check_inputs)
            res = H.run_timing(req, state, cand) if variant in ("as-graded", "no-check", "same-module") \
                else variant_timing(H, req, state, cand, variant)
            for c in res["configs"]:
                out["rows"].append({"variant": variant, "rep": rep, "config": c["config"], "error": c.get("error"),
                                    "speedup": (interquartile_mean(c["baseline_runs_ms"])
                                                / interquartile_mean(c["candidate_runs_ms"])) if c["ok"] else None})
        print(f"rep {rep + 1}/{args.n}", flush=True)
    summary = {}
    for variant in VARIANTS:
        for cfg in task.spec.seen_configs:
            xs = [r["speedup"] for r in out["rows"] if r["variant"] == variant and r["config"] == cfg and r["speedup"]]
            if xs:
                summary[f"{variant} {cfg['rows']}x{cfg['hidden']}"] = {"mean": statistics.fmean(xs), "min": min(xs),
                                                                         "max": max(xs)}
    out["summary"] = summary
    out["flush_us_per_call"] = flush_cost(hw)
    print("flush:", {k: round(v, 1) for k, v in out["flush_us_per_call"].items()}, "us per call")
    Path(args.out).write_text(json.dumps(out, indent=1))
    for k, v in summary.items():
        print(f"{k:32s} mean {v['mean']:.4f}  [{v['min']:.4f}, {v['max']:.4f}]")


if __name__ == "__main__":
    main()
