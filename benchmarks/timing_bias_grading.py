"""Next step on the self-speedup bias (benchmarks/results/README.md, (a)): replay a grading's sequence in one
process, no sandbox, on a GPU, and see which step makes the candidate read slower. Writes JSON to --out.

Written 2026-11-29 after the session's device time was spent: NOT YET RUN. Variants, N repetitions each, the
rmsnorm baseline against itself, per-config speedups from the interquartile means the grader uses:

- ``as-graded``: harness.prepare (baseline graphs first), harness.check with the candidate (a copy of the
  baseline in another directory, as graded), then harness.run_timing, as a real grading does;
- ``no-check``: the same without the correctness run before timing;
- ``same-module``: the candidate is the baseline's own function object (no second module, no second compile).

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
        for variant in ("as-graded", "no-check", "same-module"):
            req = request(task, hw, copy, work, seed=rep)
            state = H.prepare(req)
            # same-module: the very function object the baseline's graphs were captured from
            cand = next(t[4].fn for t in state.timing if not isinstance(t[4], str)) if variant == "same-module" \
                else cand_copy
            if variant == "as-graded":
                H.check(req, cand, state.check_inputs)
            res = H.run_timing(req, state, cand)
            for c in res["configs"]:
                out["rows"].append({"variant": variant, "rep": rep, "config": c["config"], "error": c.get("error"),
                                    "speedup": (interquartile_mean(c["baseline_runs_ms"])
                                                / interquartile_mean(c["candidate_runs_ms"])) if c["ok"] else None})
        print(f"rep {rep + 1}/{args.n}", flush=True)
    summary = {}
    for variant in ("as-graded", "no-check", "same-module"):
        for cfg in task.spec.seen_configs:
            xs = [r["speedup"] for r in out["rows"] if r["variant"] == variant and r["config"] == cfg and r["speedup"]]
            if xs:
                summary[f"{variant} {cfg['rows']}x{cfg['hidden']}"] = {"mean": statistics.fmean(xs), "min": min(xs),
                                                                         "max": max(xs)}
    out["summary"] = summary
    Path(args.out).write_text(json.dumps(out, indent=1))
    for k, v in summary.items():
        print(f"{k:32s} mean {v['mean']:.4f}  [{v['min']:.4f}, {v['max']:.4f}]")


if __name__ == "__main__":
    main()
