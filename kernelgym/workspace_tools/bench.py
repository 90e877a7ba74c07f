"""What the grader would reward for your kernel, before you submit. ADVISORY: the grader re-times everything itself.

    python bench.py                      # every seen config
    python bench.py --configs 0,2        # some of them
    python bench.py --full               # the grader's own number of warm-up calls, runs and rounds (slower)
    python bench.py --target h100        # CPU interpreter: the GPU profile the estimate models (default h200)
    python bench.py --check              # check.py first (in the same process), then bench if correct

Per config it compares your kernel with the ORIGINAL kernel (a pristine copy in .kernelgym/baseline/), and reports
the speedup, then their arithmetic mean (what the score pays: 120 + 100 x mean, if correct) and geometric mean.

- On a GPU it MEASURES, with the grader's own timing code (.kernelgym/harness.py: `Timed`, `time_pair`; statistics
  from .kernelgym/timing_stats.py): CUDA graphs with timing events inside them, the caches flushed by a read before
  every run, input values rotated, original and yours interleaved in rounds with the order alternating, per kernel
  the interquartile mean of its runs; noise band = min..max of the per-round speedups. Fewer runs than the grader
  (see the method line), so its noise band is wider.
- On the CPU interpreter nothing can be timed. It reports a MODEL instead, never a measurement: the interpreter
  counts the bytes each kernel loads and stores (masked-off elements excluded), the programs and the launches, and
  the time is estimated on a GPU profile as max(bytes / peak bandwidth, flops / peak) + launches x a fixed launch
  cost. Fewer bytes moved means a lower estimate. The interpreter's grade has no speedup term: the model's speedup
  is never in the reward.

It does not check correctness (run check.py). The last line is machine-readable:
  BENCH kind=<measured|model> speedup_mean=<x> speedup_geomean=<x> band=<lo>..<hi> bytes_ratio=<x|nan> configs=<n>
"""
import argparse
import json
import math
import os
import sys
import time
import types

T0 = time.monotonic()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch  # noqa: E402

from kernelgym_entry import _module, entry, load, outputs, spec  # noqa: E402

SETTINGS = json.load(open(os.path.join(HERE, ".kernelgym", "bench.json")))
BASELINE_DIR = os.path.join(HERE, ".kernelgym", "baseline")
PEAK_KEY = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
ADVISORY = ("ADVISORY: what the grader would reward, estimated before grading; the grade is the grader's own "
            "measurement, not this.")


def peak_tflops(peaks, cfg):
    return peaks.get(PEAK_KEY.get(cfg.get("dtype"), cfg.get("dtype")), 0) or max(peaks.values(), default=0)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs and all(x > 0 for x in xs) else float("nan")


def summary_line(kind, speedups, bands, bytes_ratio):
    mean = sum(speedups) / len(speedups) if speedups else float("nan")
    lo = sum(b[0] for b in bands) / len(bands) if bands else float("nan")
    hi = sum(b[1] for b in bands) / len(bands) if bands else float("nan")
    return (f"BENCH kind={kind} speedup_mean={mean:.4f} speedup_geomean={geomean(speedups):.4f} band={lo:.4f}..{hi:.4f} "
            f"bytes_ratio={bytes_ratio:.4f} configs={len(speedups)}")


# -- CPU interpreter: the model ------------------------------------------------------------------------------------
class Traffic:
    """Counts, while installed, what Triton's interpreter does: bytes loaded and stored by every kernel (only the
    elements whose mask is true), programs run and launches. Wraps the interpreter builder's masked load and store
    (every load and store, block-pointer and descriptor ones, gathers and scatters included, goes through them), its
    atomics (a load and a store per active element) and the grid executor."""

    def __init__(self):
        from triton.runtime import interpreter
        self.mod = interpreter
        self.reset()

    def reset(self):
        self.loaded = self.stored = self.programs = self.launches = 0

    def __enter__(self):
        builder, grid = self.mod.InterpreterBuilder, self.mod.GridExecutor
        self.saved = (builder.create_masked_load, builder.create_masked_store, grid.__call__,
                      builder.create_atomic_rmw, builder.create_atomic_cas)
        load_fn, store_fn, call_fn, rmw_fn, cas_fn = self.saved
        me = self

        def elem_bytes(ptrs):
            return max(1, ptrs.get_element_ty().primitive_bitwidth // 8)

        def active(ptrs, mask):
            import numpy as np
            return int(np.count_nonzero(np.broadcast_to(mask.data, ptrs.data.shape)))

        def masked_load(self_, ptrs, mask, *a, **k):
            me.loaded += active(ptrs, mask) * elem_bytes(ptrs)
            return load_fn(self_, ptrs, mask, *a, **k)

        def masked_store(self_, ptrs, value, mask, *a, **k):
            me.stored += active(ptrs, mask) * elem_bytes(ptrs)
            return store_fn(self_, ptrs, value, mask, *a, **k)

        def launch(self_, *a, **k):
            before = getattr(self.mod.interpreter_builder, "grid_dim", None)
            me.launches += 1
            out = call_fn(self_, *a, **k)
            dims = getattr(self.mod.interpreter_builder, "grid_dim", None)
            if dims is not None and dims is not before:
                me.programs += dims[0] * dims[1] * dims[2]
            return out

        def atomic_rmw(self_, op, ptr, val, mask, *a, **k):  # a read and a write per active element
            n = active(ptr, mask) * elem_bytes(ptr)
            me.loaded += n
            me.stored += n
            return rmw_fn(self_, op, ptr, val, mask, *a, **k)

        def atomic_cas(self_, ptr, *a, **k):
            n = int(ptr.data.size) * elem_bytes(ptr)
            me.loaded += n
            me.stored += n
            return cas_fn(self_, ptr, *a, **k)

        (builder.create_masked_load, builder.create_masked_store, grid.__call__, builder.create_atomic_rmw,
         builder.create_atomic_cas) = masked_load, masked_store, launch, atomic_rmw, atomic_cas
        return self

    def __exit__(self, *exc):
        builder, grid = self.mod.InterpreterBuilder, self.mod.GridExecutor
        (builder.create_masked_load, builder.create_masked_store, grid.__call__, builder.create_atomic_rmw,
         builder.create_atomic_cas) = self.saved


def count(fn, args, traffic):
    """(bytes loaded, bytes stored, programs, launches) of one call of `fn`."""
    traffic.reset()
    fn(*args)
    return traffic.loaded, traffic.stored, traffic.programs, traffic.launches


def model(args, configs):
    targets = SETTINGS["model"]["targets"]
    target_id = args.target or SETTINGS["model"]["default_target"]
    if target_id not in targets:
        sys.exit(f"error: --target must be one of {', '.join(sorted(targets))}")
    target, launch_us = targets[target_id], SETTINGS["model"]["launch_us"]
    bw = target["peak_bandwidth_gbps"] * 1e9
    print(ADVISORY)
    print(f"method: MODEL, not a measurement (CPU interpreter: nothing can be timed). Bytes loaded and stored by "
          f"each kernel (masked-off elements excluded), programs and launches are counted by Triton's interpreter; "
          f"time is estimated for {target['name']} ({target_id}) as max(bytes / {target['peak_bandwidth_gbps']:g} GB/s, "
          f"flops / peak) + launches x {launch_us:g} us (flops from the task's roofline formula). Every global "
          f"access counts as DRAM traffic (no cache is modelled).")
    print("reward: the interpreter's grade has no speedup term (a correct kernel scores 120); this estimate is never "
          "in the reward.")
    builder = load(spec["input_builder"])
    base_fn, cand_fn = entry(BASELINE_DIR, "bench_baseline"), entry()
    speedups, bytes_b_all, bytes_c_all = [], 0, 0
    with Traffic() as traffic:
        for i in configs:
            cfg = spec["configs"][i]
            roof = (SETTINGS.get("roofline") or [None] * len(spec["configs"]))[i] or {}
            flops = roof.get("flops") or 0.0
            peak = peak_tflops(target["peak_tflops"], cfg) * 1e12
            try:
                b = count(base_fn, builder(cfg, 4321 + i, "cpu"), traffic)
                c = count(cand_fn, builder(cfg, 4321 + i, "cpu"), traffic)
            except Exception as e:  # noqa: BLE001
                print(f"config {i} {cfg}: error: {type(e).__name__}: {str(e)[:500]}")
                continue

            def est(n):
                return max((n[0] + n[1]) / bw, flops / peak if peak else 0.0) * 1e6 + n[3] * launch_us

            tb, tc = est(b), est(c)
            sp = tb / tc if tc > 0 else float("nan")
            speedups.append(sp)
            bytes_b_all += b[0] + b[1]
            bytes_c_all += c[0] + c[1]
            floor = roof.get("bytes")
            frac = f", roofline bytes {floor / (c[0] + c[1]):.0%} of what it moves" if floor and c[0] + c[1] else ""
            print(f"config {i} {cfg}: original {b[0] + b[1]} B ({b[0]} loaded, {b[1]} stored), {b[2]} programs, "
                  f"{b[3]} launch{'es' if b[3] != 1 else ''}, est {tb:.4f} us | yours {c[0] + c[1]} B ({c[0]} loaded, "
                  f"{c[1]} stored), {c[2]} programs, {c[3]} launch{'es' if c[3] != 1 else ''}, est {tc:.4f} us | "
                  f"bytes x{(c[0] + c[1]) / max(b[0] + b[1], 1):.3f}, est. speedup {sp:.4f}x (model){frac}")
    ratio = bytes_c_all / bytes_b_all if bytes_b_all else float("nan")
    if speedups:
        mean = sum(speedups) / len(speedups)
        print(f"estimate (model, {target_id}): mean speedup {mean:.4f}x, geometric mean {geomean(speedups):.4f}x, "
              f"bytes moved x{ratio:.3f} of the original; on {target['name']} this would score about "
              f"{120 + 100 * mean:.1f} if correct (the interpreter's grade: 120 if correct). Noise band: none (a "
              f"deterministic count).")
    print(f"time: {time.monotonic() - T0:.1f} s")
    print(summary_line("model", speedups, [(s, s) for s in speedups], ratio))


# -- GPU: measured with the grader's own timing code ---------------------------------------------------------------
DEVICE = "cuda"
_CODE = {}


def grader_code():
    """The grader's harness (`Timed`, `time_pair`, ...) and statistics, from their copies in .kernelgym/."""
    if not _CODE:
        _CODE["harness"] = _module(os.path.join(HERE, ".kernelgym", "harness.py"), "kernelgym_bench_harness")
        _CODE["stats"] = _module(os.path.join(HERE, ".kernelgym", "timing_stats.py"), "kernelgym_bench_stats")
    return _CODE["harness"], _CODE["stats"]


def measure(args, configs):
    harness, stats = grader_code()
    protocol = harness.protocol
    knobs = SETTINGS["grader"] if args.full else SETTINGS["bench"]
    warmup, reps, rounds = args.warmup or knobs["warmup"], args.reps or knobs["reps"], args.rounds or knobs["rounds"]
    input_sets = max(2, knobs["input_sets"])
    flush_bytes = SETTINGS["flush_bytes"]
    g = SETTINGS["grader"]
    print(ADVISORY)
    print(f"method: MEASURED on {torch.cuda.get_device_name(0) if DEVICE == 'cuda' else DEVICE} with the grader's timing code (harness.time_pair): "
          f"CUDA graphs (events inside the graph where possible), caches flushed by reading {flush_bytes / 2**20:.0f} "
          f"MiB before every run, {input_sets} input sets rotated, original and yours interleaved in {rounds} rounds "
          f"(order alternating), {warmup} warm-up calls, {reps} timed runs each, interquartile mean per kernel; "
          f"noise band = min..max of the per-round speedups. The grader: {g['warmup']} warm-up, {g['reps']} runs "
          f"(fewer where the original's runs would take over {g.get('timed_ms_per_config', 0):g} ms a config), "
          f"{g['rounds']} rounds.")
    slots = [protocol.OutputSlot(s["name"], s.get("arg")) for s in spec["outputs"]]
    builder = load(spec["input_builder"])
    base_fn, cand_fn = entry(BASELINE_DIR, "bench_baseline"), entry()
    flush = torch.ones(flush_bytes // 4, dtype=torch.float32, device=DEVICE) if flush_bytes else None
    reset_l2 = harness._persisting_l2_reset()
    gen = torch.Generator(device=DEVICE).manual_seed(4321)
    speedups, bands = [], []
    for i in configs:
        cfg = spec["configs"][i]
        try:
            verify = builder(cfg, protocol.verify_seed(4321, i), DEVICE)
            pool = harness.timing_pool(verify, gen, input_sets)
            expected = []
            for a in pool:
                copies = tuple(harness._clone(x) for x in a)
                expected.append(tuple(o.detach().clone() for o in harness.collect(base_fn(*copies), copies, slots)))
            static = tuple(harness._clone(a) for a in verify)
            graph_pool = torch.cuda.graph_pool_handle() if DEVICE == "cuda" else None
            base = harness.Timed(base_fn, static, warmup, slots, graph_pool)
            base.out = None
            cand = harness.Timed(cand_fn, static, warmup, slots, graph_pool)
            runs = reps
            if args.full and not args.reps:  # as the grader sizes them: fewer where the original's call is long
                runs = protocol.timed_reps(reps, rounds, harness._time_one_call(base),
                                           float(knobs.get("timed_ms_per_config", 0.0)))
            tols = []
            for s in spec["outputs"]:
                dtype = cfg.get("dtype") if s["dtype"] == "config" else s["dtype"]
                tol = spec["tolerance"].get(dtype)
                rule = s["rule"].get(dtype, "tolerance")
                tols.append(None if rule != "tolerance" or not tol else (2 * tol["atol"], 2 * tol["rtol"]))
            # The gradings' turns on the GPU (GraderConfig.gpu_schedule), where the env takes them: no grading's
            # timed runs overlap these.
            turn = types.SimpleNamespace(gpu_lock=SETTINGS.get("gpu_lock"), gpu_wait_s=SETTINGS.get("gpu_wait_s", 60.0))
            with harness.gpu_turn(turn):
                times, how, wrong = harness.time_pair(base, cand, pool, flush, runs, rounds, reset_l2, expected, tols)
            if wrong:
                print(f"config {i} {cfg}: WRONG in a timed run: {wrong}")
                continue
            b_runs, c_runs, note = stats.choose_runs({"baseline_runs_ms": times["baseline"],
                                                      "candidate_runs_ms": times["candidate"],
                                                      "baseline_outer_runs_ms": times["baseline_outer"],
                                                      "candidate_outer_runs_ms": times["candidate_outer"]})
            s = stats.summarize(b_runs, c_runs, rounds)
        except Exception as e:  # noqa: BLE001
            print(f"config {i} {cfg}: error: {type(e).__name__}: {str(e)[:800]}")
            continue
        speedups.append(s["speedup"])
        bands.append(tuple(s["noise_band"]))
        roof = (SETTINGS.get("roofline") or [None] * len(spec["configs"]))[i] or {}
        frac = ""
        if roof.get("bytes") and SETTINGS["peak_bandwidth_gbps"]:
            gbps = roof["bytes"] / (s["candidate_ms"] * 1e-3) / 1e9
            frac = f", {gbps:.0f} GB/s = {gbps / SETTINGS['peak_bandwidth_gbps']:.0%} of peak bandwidth"
        print(f"config {i} {cfg}: original {s['baseline_ms'] * 1000:.2f} us, yours {s['candidate_ms'] * 1000:.2f} us, "
              f"speedup {s['speedup']:.4f}x (band {s['noise_band'][0]:.3f}..{s['noise_band'][1]:.3f}){frac} "
              f"[{base.mode} / {cand.mode}; {how}]" + (f" note: {note}" if note else ""))
    if speedups:
        mean = sum(speedups) / len(speedups)
        print(f"measured: mean speedup {mean:.4f}x (what the score pays), geometric mean {geomean(speedups):.4f}x; "
              f"implied score if correct: {120 + 100 * mean:.1f}")
    print(f"time: {time.monotonic() - T0:.1f} s")
    print(summary_line("measured", speedups, bands, float("nan")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", default="", help="comma-separated config indices (default: all seen configs)")
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--reps", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--full", action="store_true", help="the grader's warm-up, runs and rounds")
    ap.add_argument("--target", default="", help="CPU interpreter: the GPU profile the model estimates for")
    ap.add_argument("--check", action="store_true", help="run check.py first (same process); bench only if correct")
    args = ap.parse_args()
    n = len(spec["configs"])
    try:
        configs = [int(c) for c in args.configs.split(",") if c.strip()] or list(range(n))
    except ValueError:
        sys.exit("error: --configs takes comma-separated integers")
    if any(not 0 <= c < n for c in configs):
        sys.exit(f"error: config indices must be in 0..{n - 1}")
    if args.rounds and args.reps and args.reps < args.rounds:
        sys.exit("error: --reps must be at least --rounds")
    if args.check:
        import runpy
        sys.argv = [os.path.join(HERE, "check.py")]
        checked = runpy.run_path(os.path.join(HERE, "check.py"), run_name="__main__")
        if checked.get("n_ok") != len(spec["configs"]):
            print("BENCH skipped: the kernel is not correct on every seen config (check.py above)")
            return
    if spec["interpreter"]:
        model(args, configs)
    else:
        measure(args, configs)


if __name__ == "__main__":
    main()
