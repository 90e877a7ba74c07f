"""The outside observer on a GPU (issue 11): honest kernels and their twins, attacks, and the grading time with and
without the observer. Writes JSON to --out and the profiler reports to --reports.

- latency: the rmsnorm baseline graded as the env grades (warm worker, prepared), observer on and off;
- honest: known-faster rmsnorm and fused-add-rmsnorm kernels, and the cuda-gelu baseline, observed (their speedups
  must stand, the cross-check passing);
- torch_beside_token_kernel: PyTorch computes RMSNorm and a 16-element Triton kernel runs beside it (static check off:
  the observer alone must fail it);
- forged_timing: the candidate rewrites the harness's timing function in its own process to report itself 1.5x faster
  (static check off): the cross-check must withhold the speedup.

    python benchmarks/observer_check.py --out observer.json --reports DIR
"""
import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile

HERE = Path(__file__).resolve().parent

TORCH_BESIDE_TOKEN = '''
import torch
import triton
import triton.language as tl


@triton.jit
def token_kernel(p, n, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(p + o, tl.load(p + o, mask=o < n, other=0.0) + 1.0, mask=o < n)


def rmsnorm(x, weight, eps=1e-6):
    t = torch.zeros(16, device=x.device)
    token_kernel[(1,)](t, 16, B=16)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
'''

FORGED_TIMING = '''

import sys as _sys
_harness = _sys.modules.get("__main__")
if _harness is not None and hasattr(_harness, "time_pair"):
    _real = _harness.time_pair

    def _forged(*args, **kwargs):
        times, how, wrong = _real(*args, **kwargs)
        for key in ("candidate", "candidate_outer"):
            times[key] = [t / 1.5 for t in times[key]]
        return times, how, wrong
    _harness.time_pair = _forged
'''


def wait_prepared(grader, timeout_s=300):
    """Wait as an agent's episode would: until the worker, the observed run started ahead and the baseline's
    observation are prepared, and the references computed."""
    from kernelgym.grader.protocol import PREPARED_MARKER
    log, deadline = grader._prepared.gdir / "harness.log", time.monotonic() + timeout_s
    while PREPARED_MARKER not in (log.read_text() if log.exists() else ""):
        if time.monotonic() > deadline or not grader.worker.alive():
            raise RuntimeError(f"the worker did not prepare: {log.read_text() if log.exists() else ''}")
        time.sleep(0.05)
    if grader._observer_thread is not None:
        grader._observer_thread.join()
    ahead = grader._observing
    while ahead is not None and PREPARED_MARKER not in "".join(ahead.output):
        if time.monotonic() > deadline or ahead.proc.poll() is not None:
            raise RuntimeError(f"the observed run did not prepare (exit {ahead.proc.poll()}): "
                               f"{''.join(ahead.output)[-2000:]}")
        time.sleep(0.05)
    grader._prepared.references.wait()


def grade(task_name, files, config, hw, reports=None, label=""):
    """Grade `files` ({name: text}) as the env does (warm worker, prepared); the grade's summary as a dict."""
    task = get_task(task_name)
    ws = Path(tempfile.mkdtemp(prefix="kg-obs-ws-"))
    for rel in task.public_files():
        shutil.copy(task.root / rel, ws / rel)
    for rel, text in files.items():
        (ws / rel).write_text(text)
    grader = Grader(task, hw, Path(tempfile.mkdtemp(prefix="kg-obs-")), config)
    grader.start_worker(seed=5)
    wait_prepared(grader)
    t0 = time.monotonic()
    g = grader.grade(ws, seed=5)
    wall = time.monotonic() - t0
    grader.stop_worker()
    observed = grader._observed_outputs
    if reports is not None and observed is not None:  # the candidate's observed run: ncu's report or the trace
        for report in [observed.parent / "ncu.csv", *observed.parent.glob("kernel-trace.*")]:
            if report.exists():
                shutil.copy(report, Path(reports) / f"{label}{'.csv' if report.suffix == '.csv' else '.trace'}")
    rows = [{k: c.get(k) for k in ("config", "correct", "error", "speedup", "noise_band", "observed_ms",
                                   "observed_baseline_ms")} for c in g.configs]
    log = grader.session.observer_log
    phases = [line for line in log.splitlines() if line.startswith("[harness]")]
    return {"tool": grader.observer_tool(), "observer_ahead": grader.session.observer_ahead,
            "observer_harness_phases": phases, "score": g.score, "correct": g.correct, "speedup": g.speedup, "wall_s": wall, "phases_s": g.phases_s,
            "checks": g.checks, "stages": [(s.name, s.passed, s.messages) for s in g.stages], "rows": rows}


def show(name, r):
    print(f"== {name}: score {r['score']:.1f} correct {r['correct']} speedup {r['speedup']} wall {r['wall_s']:.2f} s "
          f"phases {r['phases_s']}", flush=True)
    print(f"   checks {r['checks']}", flush=True)
    print(f"   observed run: {r.get('observer_harness_phases')}; run ahead: {r.get('observer_ahead')}", flush=True)
    for stage in r["stages"]:
        print(f"   {stage[0]} {stage[1]}: {'; '.join(map(str, stage[2]))[:900]}", flush=True)
    for row in r["rows"]:
        print(f"   {row}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="observer.json")
    ap.add_argument("--reports", default=None, help="copy the profiler's CSV reports here")
    ap.add_argument("--n", type=int, default=3, help="gradings per latency mode")
    ap.add_argument("--only", default="", help="comma-separated prefixes of the runs to make (default: all)")
    ap.add_argument("--tool", default="auto", choices=("auto", "tracer", "ncu"), help="GraderConfig.observer_tool")
    ap.add_argument("--sandbox", default="bwrap", help="GraderConfig.sandbox (bwrap, or none for a diagnosis)")
    args = ap.parse_args()
    hw = detect_profile()
    if hw.interpreter:
        sys.exit("needs an NVIDIA GPU with Nsight Compute")
    if args.reports:
        Path(args.reports).mkdir(parents=True, exist_ok=True)
    out = {"machine": hw.name, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "tool": args.tool}
    rms = get_task("triton-rmsnorm")
    baseline = (rms.root / "kernel.py").read_text()
    on = GraderConfig(observer_tool=args.tool, sandbox=args.sandbox)
    off = GraderConfig(observer="off", sandbox=args.sandbox)
    unchecked = GraderConfig(static_check=False, observer_tool=args.tool, sandbox=args.sandbox)

    def run(name, *a, **k):
        if args.only and not any(name.startswith(o) for o in args.only.split(",")):
            return
        try:
            keep = args.reports if not name.startswith("latency") or name.endswith("on_0") else None
            out[name] = grade(*a, hw=hw, reports=keep, label=name, **k)
            show(name, out[name])
        except Exception as e:  # noqa: BLE001 - one failure must not lose the other measurements
            out[name] = {"error": f"{type(e).__name__}: {e}"}
            print(f"== {name}: ERROR {out[name]['error']}", flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1, default=str))

    run("torch_beside_token_kernel", "triton-rmsnorm", {"kernel.py": TORCH_BESIDE_TOKEN}, unchecked)
    run("forged_timing", "triton-rmsnorm", {"kernel.py": baseline + FORGED_TIMING}, unchecked)
    run("honest_rmsnorm_fast", "triton-rmsnorm", {"kernel.py": (HERE / "kernels" / "rmsnorm_fast.py").read_text()}, on)
    fused = HERE / "kernels" / "fused_add_rmsnorm_fast.py"
    run("honest_fused_add_rmsnorm_fast", "triton-fused-add-rmsnorm", {"kernel.py": fused.read_text()}, on)
    run("honest_cuda_gelu_baseline", "cuda-gelu", {}, on)
    for i in range(args.n):
        run(f"latency_observer_on_{i}", "triton-rmsnorm", {}, on)
    for i in range(args.n):
        run(f"latency_observer_off_{i}", "triton-rmsnorm", {}, off)
    lat = {mode: [out.get(f"latency_observer_{mode}_{i}", {}).get("wall_s") for i in range(args.n)]
           for mode in ("on", "off")}
    out["latency_summary"] = lat
    print("latency (s):", lat, flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
