"""Self-check for your kernel: runs it on the seen configs and compares with the reference.

    python check.py            # correctness on every seen config, and time on a GPU

Advisory only: the grader re-runs everything itself, in a fresh process, on fresh inputs.
Prints one summary line at the end:  CHECK correct=<n>/<total> time_ms=<sum of medians or nan>
"""
import importlib.util
import json
import os
import sys

import torch

sys.path.insert(0, os.getcwd())
spec = json.load(open("configs.json"))


def load(ref):
    file, func = ref.split(":")
    s = importlib.util.spec_from_file_location(file[:-3], file)
    m = importlib.util.module_from_spec(s)
    s.loader.exec_module(m)
    return getattr(m, func)


fn, reference, builder = load(spec["entry_point"]), load(spec["reference"]), load(spec["input_builder"])
device = "cpu" if spec["interpreter"] else "cuda"
n_ok, total_ms = 0, 0.0
for i, cfg in enumerate(spec["configs"]):
    tol = spec["tolerance"][cfg["dtype"]]
    try:
        args = builder(cfg, 1234 + i, device)
        out = fn(*args)
        ref = reference(*args)
        ok = out.shape == ref.shape and bool(torch.allclose(out.float(), ref.float(), atol=tol["atol"], rtol=tol["rtol"]))
        err = (out.float() - ref.float()).abs().max().item() if out.shape == ref.shape else float("nan")
        msg = f"max_abs_err={err:.3g}"
    except Exception as e:  # noqa: BLE001
        ok, msg = False, f"error: {type(e).__name__}: {e}"
    t = float("nan")
    if ok and not spec["interpreter"]:
        import triton.testing
        t = triton.testing.do_bench(lambda: fn(*args), warmup=25, rep=100, return_mode="median")
        total_ms += t
    n_ok += ok
    print(f"{cfg}: {'OK' if ok else 'WRONG'} {msg} time_ms={t:.4f}", flush=True)
if spec["interpreter"]:
    print("time: not measured on the CPU interpreter (its timings mean nothing)")
    total_ms = float("nan")
print(f"CHECK correct={n_ok}/{len(spec['configs'])} time_ms={total_ms if n_ok == len(spec['configs']) else float('nan'):.4f}")
