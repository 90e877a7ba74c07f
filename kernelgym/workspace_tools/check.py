"""Self-check for your kernel: runs it on the seen configs and compares every output with the reference.

    python check.py            # correctness on every seen config, and time on a GPU

Advisory only: the grader re-runs everything itself, in a fresh process, on fresh inputs, and times it its own way.
Prints one summary line at the end:  CHECK correct=<n>/<total> time_ms=<sum of medians or nan>
"""
import os
import sys
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernelgym_entry import comparing, entry, load, outputs, spec  # noqa: E402


def compare(out, ref, slot, cfg):
    """(ok, message) for one output, by the grader's own comparison (its compare.py, copied into .kernelgym/)."""
    dtype = cfg.get("dtype") if slot["dtype"] == "config" else slot["dtype"]
    tol = spec["tolerance"].get(dtype)
    ok, msg, _ = comparing.compare_output(out.detach().cpu(), ref.detach().cpu(), dtype, slot["rule"].get(dtype, "tolerance"),
                                          SimpleNamespace(**tol) if tol else None)
    return ok, f"{slot['name']}: {msg}"


fn, reference, builder = entry(), load(spec["reference"]), load(spec["input_builder"])
device = "cpu" if spec["interpreter"] else "cuda"
n_ok, total_ms = 0, 0.0
for i, cfg in enumerate(spec["configs"]):
    try:
        args = builder(cfg, 1234 + i, device)
        ref = reference(*builder(cfg, 1234 + i, device))
        refs = tuple(ref) if isinstance(ref, (tuple, list)) else (ref,)
        outs = outputs(fn(*args), args)
        results = [compare(o, r, s, cfg) for o, r, s in zip(outs, refs, spec["outputs"])]
        ok, msg = all(r[0] for r in results), "; ".join(r[1] for r in results)
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
