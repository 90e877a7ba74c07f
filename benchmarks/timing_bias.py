"""Where the self-grading bias comes from (issue 11): the candidate reads 0.5-1% slower than the identical baseline
on three of triton-rmsnorm's five configs, in 17-20 of 20 gradings (benchmarks/results/README.md, session 4).

    source benchmarks/gpu_setup.sh
    python3 benchmarks/timing_bias.py --out $OUT/timing_bias.json [--n 10]

No grader, no sandbox: the harness's own `Timed` and `time_pair` in this process, on the task's seen configs, with
the kernel loaded twice (module A from the task folder, module B from a copy in a temporary folder, as the grader
loads the baseline and the candidate). Per config and repeat, three arrangements, each on fresh graphs:

- ``as_graded``: A captured first and timed as the baseline, B captured second as the candidate (the grader's order);
- ``roles_swapped``: the same captures, B timed as the baseline and A as the candidate;
- ``capture_swapped``: B captured first as the baseline, A second as the candidate.

Each ratio is the baseline's interquartile mean over the candidate's (as the grader computes a speedup). Read: if
the graph captured second reads slower whatever its role, capture order is the cause; if module B reads slower
whatever its order, loading the module second is; if the candidate's role reads slower whatever it holds, something
in `time_pair` treats the two sides differently. Nothing is timed on the CPU interpreter: the script needs a GPU.
"""
import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from kernelgym.discovery import get_task
from kernelgym.grader import harness
from kernelgym.grader.timing_stats import interquartile_mean
from kernelgym.hardware import detect_profile


def timed_pair(first_fn, second_fn, static, pool, slots, flush, reset_l2, args, swap_roles: bool) -> float:
    """Capture `first_fn` then `second_fn` (same static inputs and graph pool, the first's output block released
    for the second, as the grader prepares them), time them with `time_pair`, and return baseline IQM / candidate
    IQM, where the baseline is the first captured unless `swap_roles`."""
    graph_pool = torch.cuda.graph_pool_handle()
    first = harness.Timed(first_fn, static, args.warmup, slots, graph_pool)
    first.out = None  # as prepare_baseline: the second graph gets the same output block
    second = harness.Timed(second_fn, static, args.warmup, slots, graph_pool)
    base, cand = (second, first) if swap_roles else (first, second)
    times, _how, _wrong = harness.time_pair(base, cand, pool, flush, args.reps, args.rounds, reset_l2)
    return interquartile_mean(times["baseline"]) / interquartile_mean(times["candidate"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="triton-rmsnorm")
    ap.add_argument("--n", type=int, default=10, help="repeats of each arrangement per config")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--input-sets", type=int, default=4)
    ap.add_argument("--out", default="timing_bias.json")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no GPU: nothing to time (this script measures the GPU timing path only)", file=sys.stderr)
        return 2
    task, hw = get_task(args.task), detect_profile()
    copy = Path(tempfile.mkdtemp(prefix="kg-bias-")) / "b"
    shutil.copytree(task.root, copy)
    fn_a = harness.load(task.spec.entry_point, str(task.root), "kernelgym_bias_a")
    fn_b = harness.load(task.spec.entry_point, str(copy), "kernelgym_bias_b")
    builder = harness.load(task.spec.input_builder, str(task.root), "kernelgym_bias_inputs")
    slots = [harness.protocol.OutputSlot(o.name, o.arg) for o in task.spec.outputs]
    flush = torch.ones(hw.flush_bytes // 4, dtype=torch.float32, device="cuda")
    reset_l2 = harness._persisting_l2_reset()
    gen = torch.Generator(device="cuda").manual_seed(0)
    out = {"machine": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "argv": sys.argv[1:], "configs": []}
    arrangements = {"as_graded": (fn_a, fn_b, False), "roles_swapped": (fn_a, fn_b, True),
                    "capture_swapped": (fn_b, fn_a, False)}
    for i, cfg in enumerate(task.configs_for(False)):
        inputs = builder(cfg, 1000 + i, "cuda")
        pool = [inputs] + [tuple(harness._perturb(a, gen) for a in inputs) for _ in range(args.input_sets - 1)]
        static = tuple(harness._clone(a) for a in inputs)
        ratios = {name: [] for name in arrangements}
        for _ in range(args.n):
            for name, (first, second, swap) in arrangements.items():
                ratios[name].append(timed_pair(first, second, static, pool, slots, flush, reset_l2, args, swap))
        row = {"config": cfg, **{name: {"median": statistics.median(r), "below_1": sum(x < 1 for x in r),
                                        "ratios": r} for name, r in ratios.items()}}
        out["configs"].append(row)
        print(f"{cfg}: " + "; ".join(f"{name} median {row[name]['median']:.4f} ({row[name]['below_1']}/{args.n} "
                                     f"below 1)" for name in arrangements), flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
