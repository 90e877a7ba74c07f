"""What building the seeded inputs in a forked child costs per grading (issue 22, `seed_not_in_candidate_memory`).

The harness's `main` reads the request and builds every seeded input in a forked child (`harness.in_forked_child`),
which sends them back over a pipe; before, they were built in the harness's own process. This times both ways, in a
process that has torch and triton imported as the harness has, for a task's configs (the interpreter's by default;
``--seen`` for the GPU's, built on the CPU as the child builds them, to show the pipe's cost for large inputs; with
``--timed`` the verification inputs too, as a timed grading builds them). It times the building alone: the rest of
a grading is unchanged.

    python benchmarks/seed_isolation_cost.py [--task triton-rmsnorm] [--n 20] [--seen] [--timed] [--out results.json]
"""
import argparse
import dataclasses
import importlib.util
import json
import statistics
import tempfile
import time
from pathlib import Path

import triton  # noqa: F401 - the harness's process has it imported; a fork copies its page tables too

from kernelgym.discovery import get_task
from kernelgym.grader.grader import Grader
from kernelgym.hardware import detect_profile

HARNESS = Path(__file__).resolve().parents[1] / "kernelgym" / "grader" / "harness.py"


def _harness():
    spec = importlib.util.spec_from_file_location("kg_harness_bench", HARNESS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ms(samples):
    return {"median_ms": round(1e3 * statistics.median(samples), 2), "min_ms": round(1e3 * min(samples), 2),
            "max_ms": round(1e3 * max(samples), 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="triton-rmsnorm")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--seen", action="store_true", help="the GPU's configs (built on the CPU)")
    ap.add_argument("--timed", action="store_true", help="also the verification inputs of a timed grading")
    ap.add_argument("--out")
    args = ap.parse_args()
    harness = _harness()
    task = get_task(args.task)
    g = Grader(task, detect_profile("cpu-interpreter"), Path(tempfile.mkdtemp(prefix="kg-seed-bench-")))
    configs = task.spec.seen_configs if args.seen else g.configs
    req = dataclasses.replace(g._request(g.baseline_dir, 918273645, timed=False), configs=list(configs))
    if args.timed:  # seeded_inputs builds the verification inputs where the request times
        req = dataclasses.replace(req, baseline_directory=str(g.baseline_dir))
    harness.seeded_inputs(req)  # the builder's module imported, its first call's costs paid
    in_process, forked = [], []
    for _ in range(args.n):  # interleaved, so that drifts of a shared machine fall on both
        t = time.perf_counter()
        harness.seeded_inputs(req)
        in_process.append(time.perf_counter() - t)
        t = time.perf_counter()
        harness.in_forked_child(lambda: harness.seeded_inputs(req))
        forked.append(time.perf_counter() - t)
    nbytes = sum(a.numel() * a.element_size() for kind in harness.seeded_inputs(req).values() for args_ in kind
                 if not isinstance(args_, str) for a in args_ if hasattr(a, "numel"))
    result = {"task": args.task, "configs": len(configs), "seen": args.seen, "timed": args.timed, "n": args.n,
              "input_mib": round(nbytes / 2 ** 20, 2), "in_process": _ms(in_process), "forked_child": _ms(forked),
              "added_median_ms": round(1e3 * (statistics.median(forked) - statistics.median(in_process)), 2)}
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
