"""Benchmark (a): grade the task's baseline against itself N times; |speedup - 1| is pure measurement noise.

    python benchmarks/self_speedup.py --n 20 --out benchmarks/results/self_speedup.json

Also grades a candidate file (--candidate, default the known-faster rmsnorm) to show the speedup it gets.
Records per grading: speedups per config, noise bands, wall time. Needs a GPU (refuses on the interpreter).
"""
import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile
from kernelgym.task import get_task


def grade_file(grader, task, kernel: Path | None, seed: int) -> dict:
    ws = Path(tempfile.mkdtemp(prefix="kg-bench-"))
    for rel in task.spec.editable_files:
        shutil.copy(task.root / rel, ws / rel)
    if kernel is not None:
        shutil.copy(kernel, ws / task.spec.editable_files[0])
    start = time.monotonic()
    g = grader.grade(ws, seed=seed)
    return {"wall_s": time.monotonic() - start, **g.to_dict()}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--task", default="triton-rmsnorm")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--candidate", default=str(Path(__file__).parent / "kernels" / "rmsnorm_fast.py"))
    ap.add_argument("--out", default="self_speedup.json")
    args = ap.parse_args()
    task, hw = get_task(args.task), detect_profile()
    if hw.interpreter:
        sys.exit("needs a GPU: the CPU interpreter has no meaningful timing")
    grader = Grader(task, hw, Path(tempfile.mkdtemp(prefix="kg-grading-")), GraderConfig())
    runs = []
    for i in range(args.n):
        r = grade_file(grader, task, None, seed=i)
        runs.append(r)
        print(f"self {i + 1}/{args.n}: score {r['score']:.1f} speedup {r['speedup']} wall {r['wall_s']:.1f} s", flush=True)
    devs = sorted(abs(c["speedup"] - 1) for r in runs for c in r["configs"] if c.get("speedup"))
    agg = sorted(abs(r["speedup"] - 1) for r in runs if r.get("speedup"))
    fast = grade_file(grader, task, Path(args.candidate), seed=1000)
    summary = {
        "machine": hw.name, "date": time.strftime("%Y-%m-%d"), "n": args.n,
        "per_config_abs_dev": {"median": statistics.median(devs), "p95": devs[int(0.95 * (len(devs) - 1))],
                               "max": devs[-1], "count": len(devs)},
        "aggregate_abs_dev": {"median": statistics.median(agg), "p95": agg[int(0.95 * (len(agg) - 1))], "max": agg[-1]},
        "grading_wall_s": {"median": statistics.median(r["wall_s"] for r in runs)},
        "fast_candidate": {"score": fast["score"], "speedup": fast["speedup"],
                           "configs": [{k: c.get(k) for k in ("config", "baseline_ms", "candidate_ms", "speedup",
                                                              "noise_band", "achieved_gbps", "bandwidth_fraction",
                                                              "timing_mode")} for c in fast["configs"]]},
        "runs": runs,
    }
    Path(args.out).write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}, indent=1, default=str))


if __name__ == "__main__":
    main()
