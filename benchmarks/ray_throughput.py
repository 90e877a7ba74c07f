"""Gradings per hour through a vector env: kernelgym's local `AsyncVectorEnv` against the Ray vector env
(`kernelgym.distributed.make_ray_vec`) at the same N, in one call (issue 26's comparison).

    python benchmarks/ray_throughput.py --task triton-rmsnorm --envs 8 --seconds 120 --out ray_throughput.json

Each backend makes N envs, plays ``--warmup-rounds`` rounds it does not count (the envs' start, the baseline's
observation and kernel caches: a cold first round took 66 s, longer than a short window), and loops for the window: one step submitting the untouched baseline in every env (graded),
then one step that next-step-autoresets every env (a reset, as in benchmarks/throughput.py's reset then immediate
submit). Both run lockstep, so both wait for the slowest env each round; the comparison is between backends, not
against throughput.py's free-running processes. Per backend and N: gradings finished in the window, wall seconds,
gradings per hour (over the window, and over the rounds after the first, which holds the envs' start), round time
median, rewards and outcomes seen, and where the Ray actors ran (their GPU ids). ``ray_over_local`` is the ratio of
gradings per hour. On the CPU interpreter nothing is timed (rewards 120): there it checks the plumbing only.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SUBMIT = {"kind": "submit"}


def _batch(envs, n: int) -> dict:
    """A batched submit for the local vector env: every field of its Dict action space, kind ``submit``."""
    import numpy as np

    from kernelgym.spaces import ACTION_KINDS

    return {key: (np.full(n, ACTION_KINDS.index("submit"), dtype=np.int64) if key == "kind" else
                  np.zeros(n, dtype=np.int64) if hasattr(space, "n") else ("",) * n)
            for key, space in envs.single_action_space.spaces.items()}


def _loop(envs, n: int, seconds: float, action, warmup_rounds: int = 1) -> dict:
    """`warmup_rounds` rounds (not counted: the envs' start, the baseline's observation and kernel caches), then
    rounds of (submit every env, autoreset every env) for `seconds`; the counts and times."""
    t0 = time.monotonic()
    envs.reset(seed=0)
    for _ in range(warmup_rounds):
        envs.step(action)
        envs.step(action)
    warmup_s = time.monotonic() - t0
    start = time.monotonic()
    rounds, rewards, outcomes, gradings = [], [], [], 0
    while time.monotonic() - start < seconds:
        t0 = time.monotonic()
        _, reward, terminated, truncated, info = envs.step(action)
        envs.step(action)  # the autoreset: every env starts its next episode
        rounds.append(time.monotonic() - t0)
        ended = terminated | truncated
        gradings += int(ended.sum())
        rewards += [round(float(r), 1) for r in reward[ended]]
        # The Ray env's own outcome (an infra fault has no grade), else the grade's.
        per_env = info.get("outcome", (info.get("grade") or {}).get("outcome", [None] * n))
        outcomes += [str(per_env[i]) for i in range(n) if ended[i]]
    wall_s = time.monotonic() - start
    later = rounds[1:]
    return {"envs": n, "window_s": seconds, "warmup_rounds": warmup_rounds, "warmup_s": round(warmup_s, 1),
            "wall_s": round(wall_s, 1), "rounds": len(rounds), "gradings": gradings,
            "gradings_per_hour": round(gradings * 3600 / wall_s),
            "gradings_per_hour_after_first_round": round(n * len(later) * 3600 / sum(later)) if later else None,
            "first_round_s": round(rounds[0], 2) if rounds else None,
            "round_s_median": round(statistics.median(later), 2) if later else None,
            "rewards": sorted(set(rewards)), "outcomes": sorted(set(outcomes))}


def measure_local(task: str, n: int, seconds: float, run_dir: Path, warmup_rounds: int = 1) -> dict:
    """kernelgym's `AsyncVectorEnv` (``gym.make_vec(..., vectorization_mode="async")``): N env processes here."""
    import gymnasium as gym

    import kernelgym

    env_id = kernelgym.get_task(task).env_id
    # Spawned, not forked: this process has started Ray, whose threads a forked child inherits and dies on
    # (BrokenPipeError on the H200, 2026-12-03).
    envs = gym.make_vec(env_id, num_envs=n, vectorization_mode="async", vector_kwargs={"context": "spawn"},
                        run_dir=str(run_dir), max_steps=2)
    try:
        return {"backend": "local", "task": task, **_loop(envs, n, seconds, _batch(envs, n), warmup_rounds)}
    finally:
        envs.close()


def measure_ray(task: str, n: int, seconds: float, run_dir: Path, warmup_rounds: int = 1) -> dict:
    """The Ray vector env: N actors on the local Ray instance, each asking for 1/N of the host's CPUs and GPUs."""
    from kernelgym.distributed import make_ray_vec

    cpus = os.cpu_count() or 1
    envs = make_ray_vec(task, n, run_dir=str(run_dir), max_steps=2, cpus_per_env=min(1.0, cpus / n))
    try:
        where = envs.placements()
        result = _loop(envs, n, seconds, [SUBMIT] * n, warmup_rounds)
        return {"backend": "ray", "task": task, **result, "gpu_ids": sorted({",".join(w["gpu_ids"]) for w in where}),
                "replays": sum(h.replays for h in envs.handles)}
    finally:
        envs.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="triton-rmsnorm")
    ap.add_argument("--envs", default="8", help="comma-separated numbers of envs")
    ap.add_argument("--seconds", type=float, default=120.0, help="the window each backend runs for, per N")
    ap.add_argument("--run-dir", default="/tmp/kg-ray-throughput")
    ap.add_argument("--order", default="local,ray", help="which backend runs first at each N")
    ap.add_argument("--warmup-rounds", type=int, default=1,
                    help="rounds per backend before its window, not counted (the envs' start and first gradings)")
    ap.add_argument("--out", default="ray_throughput.json")
    args = ap.parse_args()

    import ray

    # All of the host's CPUs and GPUs, no dashboard (the stripped wheel of benchmarks/ray_wheel.sh has no web page).
    ray.init(include_dashboard=False, log_to_driver=False)
    results, ratios = [], {}
    for n in [int(x) for x in args.envs.split(",")]:
        by_backend = {}
        for backend in args.order.split(","):
            run_dir = Path(args.run_dir) / f"{backend}-n{n}"
            measure = measure_local if backend == "local" else measure_ray
            try:
                result = measure(args.task, n, args.seconds, run_dir, args.warmup_rounds)
            except Exception as e:  # reported, never hidden: a benchmark that fails says where
                result = {"backend": backend, "task": args.task, "envs": n, "error": f"{type(e).__name__}: {e}"}
            print(json.dumps(result), flush=True)
            results.append(result)
            by_backend[backend] = result
        if all("gradings_per_hour" in by_backend.get(b, {}) for b in ("local", "ray")):
            local = by_backend["local"]["gradings_per_hour"]
            ratios[str(n)] = round(by_backend["ray"]["gradings_per_hour"] / local, 3) if local else None
        Path(args.out).write_text(json.dumps({"machine": os.uname().nodename, "date": time.strftime("%Y-%m-%d"),
                                              "ray": ray.__version__, "cpus": os.cpu_count(),
                                              "cluster": ray.cluster_resources(), "results": results,
                                              "ray_over_local": ratios}, indent=1))
    print(json.dumps({"ray_over_local": ratios}))


if __name__ == "__main__":
    main()
