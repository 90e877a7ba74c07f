"""Runs a candidate kernel in its own process, inside the sandbox. Standalone: imports no kernelgym.

    python harness.py request.json

The request (JSON) names the kernel's entry point and the input builder (``file.py:function``, relative
to the grading directory), the configs, a seed, the device, and what to do:

- ``check``: import the entry module, call it once per config on fresh seeded inputs, and save the
  outputs (moved to the CPU) to ``outputs.pt``. The trusted parent compares them with the reference:
  nothing here decides correctness, so patching this process cannot pass a wrong kernel.
- ``time``: per config, time the kernel after warm-up (see `bench`) and report times in ms.

The result is written as JSON to the request's ``result`` path. Stage failures are reported, not raised.
Timing runs in the same process as the candidate and can, in principle, be tampered with by it: the
timer's functions are bound before the candidate is imported, and the parent sanity-checks results.
"""
import importlib.util
import json
import os
import statistics
import sys
import time
import traceback

import torch

# Bound before any candidate code runs (a candidate that later patches torch.cuda.* does not reach these).
_Event = torch.cuda.Event if torch.cuda.is_available() else None
_synchronize = torch.cuda.synchronize if torch.cuda.is_available() else None
_perf_counter = time.perf_counter


def load(ref, directory, name):
    """Import ``file.py:function`` from `directory` under module name `name`; return the function."""
    file, func = ref.split(":")
    spec = importlib.util.spec_from_file_location(name, os.path.join(directory, file))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return getattr(module, func)


def is_compile_error(exc):
    """Triton raises CompilationError subclasses when a @triton.jit function does not compile."""
    return any("CompilationError" in cls.__name__ for cls in type(exc).__mro__)


def tb(limit=20):
    return "".join(traceback.format_exc(limit=limit))[-6000:]


def check(req, fn, builder):
    """Run `fn` once per config; save outputs. Returns the result dict."""
    outputs, configs = {}, []
    for i, cfg in enumerate(req["configs"]):
        entry = {"config": cfg, "ok": True, "error": None}
        try:
            args = builder(cfg, req["seed"] + i, req["device"])
            out = fn(*args)
            if req["device"] != "cpu":
                _synchronize()
            if not isinstance(out, torch.Tensor):
                raise TypeError(f"kernel returned {type(out).__name__}, expected a torch.Tensor")
            outputs[str(i)] = out.detach().to("cpu").clone()
        except Exception as exc:  # noqa: BLE001 - a failing kernel is data
            if is_compile_error(exc):
                return {"stage": "compile", "ok": False, "error": tb(), "configs": configs}
            entry.update(ok=False, error=tb(8))
        configs.append(entry)
    torch.save(outputs, req["outputs"])
    return {"stage": "check", "ok": True, "error": None, "configs": configs}


def bench(fn, args_sets, warmup, reps, flush):
    """Median device time of one call of `fn`, in ms, with the cache flushed before each timed call.

    Each call takes the next input set (rotating, prepared beforehand). The flush kernel runs before the
    start event is recorded, so the GPU is busy while the host enqueues the call and launch gaps do not
    enter the measurement (the approach of triton.testing.do_bench).
    """
    n = len(args_sets)
    for i in range(warmup):
        fn(*args_sets[i % n])
    _synchronize()
    starts = [_Event(enable_timing=True) for _ in range(reps)]
    ends = [_Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if flush is not None:
            flush.zero_()
        starts[i].record()
        fn(*args_sets[i % n])
        ends[i].record()
    _synchronize()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    return {"median_ms": statistics.median(times), "mean_ms": statistics.fmean(times), "min_ms": min(times),
            "stdev_ms": statistics.pstdev(times), "reps": reps, "warmup": warmup}


def time_configs(req, fn, builder):
    flush = None
    if req.get("flush_bytes"):
        flush = torch.empty(req["flush_bytes"] // 4, dtype=torch.int32, device=req["device"])
    results = []
    for i, cfg in enumerate(req["configs"]):
        try:
            sets = [builder(cfg, req["seed"] + 1000 * k + i, req["device"]) for k in range(req.get("input_sets", 4))]
            fn(*sets[0])  # compile / JIT before any timing
            _synchronize()
            results.append({"config": cfg, "ok": True, "error": None,
                            **bench(fn, sets, req["warmup"], req["reps"], flush)})
        except Exception:  # noqa: BLE001
            results.append({"config": cfg, "ok": False, "error": tb(8)})
    return {"stage": "time", "ok": True, "error": None, "configs": results}


def main(path):
    with open(path) as f:
        req = json.load(f)
    gdir = req["directory"]
    try:
        builder = load(req["input_builder"], gdir, "kernelgym_inputs")
        sys.path.insert(0, gdir)  # the candidate may import its own helper files
        fn = load(req["entry_point"], gdir, "kernelgym_candidate")
        print("[harness] candidate imported", flush=True)
    except Exception:  # noqa: BLE001 - import failure of the candidate = compile gate failure
        result = {"stage": "compile", "ok": False, "error": tb(), "configs": []}
    else:
        result = (time_configs if req["mode"] == "time" else check)(req, fn, builder)
    with open(req["result"], "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1])
