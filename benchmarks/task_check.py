"""Grades a task's unchanged baseline, and optionally a known-faster kernel, with the real grader on the GPU.

    python benchmarks/task_check.py --task triton-fused-add-rmsnorm --n 3 \
        --kernel benchmarks/kernels/fused_add_rmsnorm_fast.py --out fused.json

Prints one line per grading (score, speedup, per-config speedups) and writes every grade as JSON. Exits 1 when the
baseline is not correct on every grading.
"""
import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile


def workspace(task, kernel=None):
    ws = Path(tempfile.mkdtemp(prefix="kg-ws-"))
    for rel in task.public_files():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(task.root / rel, ws / rel)
    if kernel:
        shutil.copy(kernel, ws / task.spec.entry_point.split(":")[0])
    return ws


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--kernel", help="a kernel file replacing the entry point's file (a known-faster version)")
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--out", default="task_check.json")
    args = ap.parse_args()
    task, hw = get_task(args.task), detect_profile()
    out = {"task": task.env_id, "machine": hw.name, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "gradings": []}
    ok = True
    for label, kernel in (("baseline", None), ("kernel", args.kernel)):
        if label == "kernel" and not kernel:
            continue
        ws = workspace(task, kernel)
        for i in range(args.n):
            grader = Grader(task, hw, Path(tempfile.mkdtemp(prefix="kg-g-")), GraderConfig())
            grader.start_worker(seed=i)
            time.sleep(5)  # the agent's turn: the worker prepares meanwhile
            g = grader.grade(ws, seed=i)
            grader.stop_worker()
            per = [c.get("speedup") for c in g.configs]
            print(f"{label} {i}: score {g.score:.1f} speedup {g.speedup} elapsed {g.elapsed_s:.2f} s per-config "
                  f"{[round(s, 3) if s else s for s in per]}", flush=True)
            if not g.correct:
                print(g.summary())
                ok = ok and label != "baseline"
            out["gradings"].append({"label": label, "seed": i, **g.to_dict()})
        sp = [r["speedup"] for r in out["gradings"] if r["label"] == label and r["speedup"]]
        if sp:
            print(f"{label}: median speedup {statistics.median(sp):.3f} over {len(sp)} gradings", flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
