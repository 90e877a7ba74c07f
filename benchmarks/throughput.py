"""Gradings per hour through the env: N envs in N processes, each looping reset -> submit of the untouched baseline
for a fixed time (the issue-24 measure: what an RL loop that grades every episode gets from one machine).

    python benchmarks/throughput.py --task triton-rmsnorm --envs 1,8 --seconds 120 --out throughput.json

Each process makes one env (default GraderConfig: the observer as configured by default) and records, per episode,
the reset and submit wall times (s) and the reward. The result per N: gradings, wall seconds, gradings per hour,
first and later per-grading times, and the rewards seen. On the CPU interpreter nothing is timed (rewards 120).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _worker(task: str, seconds: float, run_dir: str, queue) -> None:
    import kernelgym  # noqa: F401 - registers the envs
    from kernelgym.env import KernelArenaEnv

    rows = []
    env = KernelArenaEnv(task, run_dir=run_dir, max_steps=2)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            env.reset(seed=len(rows))
            t1 = time.monotonic()
            _, reward, *_ = env.step({"kind": "submit"})
            rows.append({"reset_s": t1 - t0, "submit_s": time.monotonic() - t1, "reward": reward,
                         "done_at_s": time.monotonic() - (deadline - seconds)})
    except Exception as e:  # reported, never hidden: a benchmark that fails says where
        rows.append({"error": f"{type(e).__name__}: {e}"})
    finally:
        env.close()
    queue.put(rows)


def measure(task: str, n_envs: int, seconds: float, run_root: Path) -> dict:
    """N envs in N processes for `seconds`; gradings that finished in the window count."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    start = time.monotonic()
    procs = [ctx.Process(target=_worker, args=(task, seconds, str(run_root / f"n{n_envs}-{i}"), queue))
             for i in range(n_envs)]
    for p in procs:
        p.start()
    per_env = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    wall_s = time.monotonic() - start
    rows = [r for env_rows in per_env for r in env_rows if "error" not in r]
    errors = [r["error"] for env_rows in per_env for r in env_rows if "error" in r]
    firsts = [env_rows[0]["reset_s"] + env_rows[0]["submit_s"] for env_rows in per_env
              if env_rows and "error" not in env_rows[0]]
    later = [r["reset_s"] + r["submit_s"] for env_rows in per_env for r in env_rows[1:] if "error" not in r]
    return {"task": task, "envs": n_envs, "window_s": seconds, "wall_s": round(wall_s, 1), "gradings": len(rows),
            "gradings_per_hour": round(len(rows) * 3600 / wall_s),
            "first_grading_s": [round(x, 2) for x in firsts],
            "later_grading_s_median": round(statistics.median(later), 2) if later else None,
            "rewards": sorted({round(r["reward"], 1) for r in rows}), "errors": errors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="triton-rmsnorm")
    ap.add_argument("--envs", default="1,8", help="comma-separated numbers of parallel envs")
    ap.add_argument("--seconds", type=float, default=120.0, help="the window each N runs for")
    ap.add_argument("--run-dir", default="/tmp/kg-throughput")
    ap.add_argument("--out", default="throughput.json")
    args = ap.parse_args()
    results = []
    for n in (int(x) for x in args.envs.split(",")):
        result = measure(args.task, n, args.seconds, Path(args.run_dir))
        print(json.dumps(result), flush=True)
        results.append(result)
        Path(args.out).write_text(json.dumps({"machine": os.uname().nodename, "date": time.strftime("%Y-%m-%d"),
                                              "results": results}, indent=1))


if __name__ == "__main__":
    main()
