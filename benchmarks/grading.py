"""Grading benchmarks for issue 3, run on a GPU; writes JSON to --out.

(a) noise: the rmsnorm baseline graded against itself N times; median and p95 of |speedup - 1|.
(b) accuracy: a known-faster rmsnorm graded against the baseline, beside the ratio of ncu's kernel durations
    (gpu__time_duration, caches flushed by ncu between kernels) for every seen config.
(c) latency: submit-to-reward with a warm grader (worker started and the grading prepared, as the env does at
    reset), against the same grading as three separate cold processes (compile, correctness, performance) as the
    reference arena does.

    python benchmarks/grading.py --n 20 --out results.json
"""
import argparse
import csv
import dataclasses
import io
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernelgym.grader import Grader, GraderConfig
from kernelgym.grader.worker import HARNESS, HARNESS_FILES
from kernelgym.grader.protocol import PREPARED_MARKER
from kernelgym.hardware import detect_profile
from kernelgym.sandbox import Limits, make_sandbox
from kernelgym.discovery import get_task

HERE = Path(__file__).resolve().parent
CONFIG = GraderConfig()  # the grader's defaults
FAST = HERE / "kernels" / "rmsnorm_fast.py"


def workspace(task, kernel=None):
    ws = Path(tempfile.mkdtemp(prefix="kg-ws-"))
    for rel in task.public_files():
        shutil.copy(task.root / rel, ws / rel)
    if kernel:
        shutil.copy(kernel, ws / "kernel.py")
    return ws


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def prepared(task, hw, seed):
    """A Grader that has prepared the grading of `seed` (as the env does at reset): its worker's child is ready and
    the parent's reference outputs are computed."""
    grader = Grader(task, hw, Path(tempfile.mkdtemp(prefix="kg-g-")), CONFIG)
    grader.start_worker(seed=seed)
    log, deadline = grader._prepared.gdir / "harness.log", time.monotonic() + 300
    while PREPARED_MARKER not in (log.read_text() if log.exists() else ""):
        if time.monotonic() > deadline or not grader.worker.alive():
            raise RuntimeError(f"the worker did not prepare: {log.read_text() if log.exists() else ''}")
        time.sleep(0.05)
    grader._prepared.references.wait()  # the parent's part of the preparation: the reference outputs
    return grader


def median_speedups(time_result):
    """Per-config speedups from the same runs with the ratio of medians (the estimator before the IQM)."""
    return [statistics.median(c["baseline_runs_ms"]) / statistics.median(c["candidate_runs_ms"])
            for c in time_result["configs"]]


def noise(task, hw, n, raw_dir=None):
    runs, med, apart = [], [], 0
    for i in range(n):
        grader = prepared(task, hw, seed=i)
        g = grader.grade(workspace(task), seed=i)
        runs.append(g.to_dict())
        time_path = next(grader.work_dir.glob("grade-*/time_result.json"))
        time_result = json.loads(time_path.read_text())
        if raw_dir:  # every timed run, for trying estimators offline
            shutil.copy(time_path, Path(raw_dir) / f"time_result-{i:02d}.json")
        med.append(statistics.fmean(median_speedups(time_result)))
        addresses = [c.get("output_addresses") for c in time_result["configs"]]
        apart += sum(1 for x in addresses if not x or x[0] != x[1])
        print("    output addresses (baseline, candidate) per config:",
              [(hex(a[0]), [q - p for p, q in zip(a, b)]) if a and b else None
               for a, b in (x or (None, None) for x in addresses)], flush=True)
        print(f"(a) self {i + 1}/{n}: score {g.score:.2f} speedup {g.speedup:.4f} (ratio of medians: {med[-1]:.4f}; "
              f"{g.elapsed_s:.2f} s)", flush=True)
    agg = [abs(r["speedup"] - 1) for r in runs]
    per = [abs(c["speedup"] - 1) for r in runs for c in r["configs"]]
    agg_med = [abs(x - 1) for x in med]
    return {"n": n, "estimator": "interquartile mean (grader)",
            "aggregate_abs_dev": {"median": statistics.median(agg), "p95": pct(agg, 0.95), "max": max(agg)},
            "per_config_abs_dev": {"median": statistics.median(per), "p95": pct(per, 0.95), "max": max(per)},
            "same_runs_ratio_of_medians_abs_dev": {"median": statistics.median(agg_med), "p95": pct(agg_med, 0.95),
                                                   "max": max(agg_med)},
            "configs_with_outputs_apart": apart,  # baseline's and candidate's graph outputs not at one address
            "scores": [r["score"] for r in runs], "mean_speedup": statistics.fmean(r["speedup"] for r in runs),
            "per_config": {str(c["config"]): [r["configs"][j]["speedup"] for r in runs]
                           for j, c in enumerate(runs[0]["configs"])}}


def ncu_ms(kernel, cfg):
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    r = subprocess.run([ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv", "--page", "raw",
                        "-k", "regex:rmsnorm", sys.executable, str(HERE / "ncu_pair.py"), str(kernel), json.dumps(cfg)],
                       capture_output=True, text=True, timeout=300)
    rows = list(csv.DictReader(io.StringIO("\n".join(x for x in r.stdout.splitlines() if x.startswith('"')))))
    vals = []
    for row in rows:
        try:
            vals.append(float(row["gpu__time_duration.sum"].replace(",", "")))  # ncu prints thousands separators
        except (KeyError, ValueError):
            pass
    if not vals:
        raise RuntimeError(f"ncu gave nothing: {r.stderr[-500:]} {r.stdout[-500:]}")
    unit = "ns"  # the first CSV row holds units; gpu__time_duration is in ns
    return statistics.median(vals[2:] or vals), unit  # first launches may include module load


def accuracy(task, hw):
    g = Grader(task, hw, Path(tempfile.mkdtemp(prefix="kg-g-")), dataclasses.replace(CONFIG, warm_worker=False)).grade(
        workspace(task, FAST), seed=99)
    rows = []
    for c in g.configs:
        b, unit = ncu_ms(task.root / "kernel.py", c["config"])
        f, _ = ncu_ms(FAST, c["config"])
        rows.append({"config": c["config"], "grader_speedup": c["speedup"], "ncu_speedup": b / f,
                     "rel_diff": c["speedup"] / (b / f) - 1, "ncu_baseline_duration": b, "ncu_fast_duration": f,
                     "ncu_unit": unit, "grader_baseline_ms": c["baseline_ms"], "grader_fast_ms": c["candidate_ms"],
                     "noise_band": c["noise_band"], "achieved_gbps": c.get("achieved_gbps"),
                     "bandwidth_fraction": c.get("bandwidth_fraction"), "timing_mode": c.get("timing_mode")})
        print(f"(b) {c['config']}: grader {c['speedup']:.3f}x  ncu {b / f:.3f}x  diff {rows[-1]['rel_diff'] * 100:+.1f}%", flush=True)
    return {"score": g.score, "speedup": g.speedup, "configs": rows}


def harness_phases(grade_dir):
    """The candidate process's phase times (s) from its harness.log: prepare, import, check, time."""
    phases = {}
    for line in (grade_dir / "harness.log").read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "[harness]" and parts[3] == "s":
            phases[parts[1]] = float(parts[2])
    return phases


def timed_worker_calls(worker):
    """Wrap `worker`'s request and stop to record their durations (s) in the returned dict: request minus the
    harness's own phases is the hand-off (commands, pipes, the child's exit where it is waited for)."""
    marks = {}
    for name in ("request", "stop"):
        def timed(*args, _orig=getattr(worker, name), _name=name, **kwargs):
            t = time.monotonic()
            try:
                return _orig(*args, **kwargs)
            finally:
                marks[_name + "_s"] = time.monotonic() - t
        setattr(worker, name, timed)
    return marks


def latency(task, hw, n):
    warm, cold, phases = [], [], []
    for i in range(n):
        grader = prepared(task, hw, seed=i)  # the agent's turn: the worker prepares meanwhile
        gdir = grader._prepared.gdir
        ws = workspace(task)
        marks = timed_worker_calls(grader.worker)
        t0 = time.monotonic()
        g = grader.grade(ws, seed=i)
        warm.append(time.monotonic() - t0)
        assert g.correct, g.summary()
        phases.append({"parent": g.phases_s, "worker": marks, "harness": harness_phases(gdir),
                       "compares": grader.session.compare_log})
        # The same grading as three cold sandboxed processes: compile, correctness, performance.
        cdir = Path(tempfile.mkdtemp(prefix="kg-3p-"))
        shutil.copytree(grader.baseline_dir, cdir / "c")
        req = json.loads((gdir / "request.json").read_text())
        box = make_sandbox("bwrap", cdir, readonly=[*HARNESS_FILES, grader.baseline_dir], gpu=True)
        t0 = time.monotonic()
        for mode in ("compile", "check", "time"):
            r = {**req, "mode": mode, "directory": str(cdir / "c")}
            (cdir / f"{mode}-req.json").write_text(json.dumps(r))
            run = box.run([sys.executable, str(HARNESS), str(cdir / f"{mode}-req.json")], limits=Limits(timeout_s=600))
            assert run.returncode == 0, run.output
        cold.append(time.monotonic() - t0)
        print(f"(c) warm submit-to-reward {warm[-1]:.2f} s {phases[-1]}; three cold processes {cold[-1]:.2f} s", flush=True)
    return {"warm_s": warm, "three_process_s": cold, "warm_median_s": statistics.median(warm),
            "three_process_median_s": statistics.median(cold), "phases": phases,
            "ratio": statistics.median(cold) / statistics.median(warm)}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--latency-n", type=int, default=3)
    ap.add_argument("--only", default="abc")
    ap.add_argument("--out", default="grading.json")
    ap.add_argument("--no-early-compare", action="store_true", help="diagnosis: compare after the harness only")
    ap.add_argument("--raw-dir", help="copy each (a) grading's time_result.json (every timed run) here")
    ap.add_argument("--observer", default="auto", help="diagnosis: GraderConfig.observer (auto, off)")
    ap.add_argument("--observer-tool", default="auto", help="diagnosis: GraderConfig.observer_tool (auto, tracer, ncu)")
    args = ap.parse_args()
    CONFIG.observer, CONFIG.observer_tool = args.observer, args.observer_tool
    if args.raw_dir:
        Path(args.raw_dir).mkdir(parents=True, exist_ok=True)
    if args.no_early_compare:  # diagnosis: nothing compared while the candidate's process runs
        CONFIG.early_compare = False
    task, hw = get_task("triton-rmsnorm"), detect_profile()
    if hw.interpreter:
        sys.exit("needs a GPU: the CPU interpreter has no meaningful timing")
    out = {"machine": hw.name, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "no_early_compare": args.no_early_compare, "observer": args.observer, "observer_tool": args.observer_tool}
    for key, fn in (("a", lambda: noise(task, hw, args.n, args.raw_dir)), ("b", lambda: accuracy(task, hw)),
                    ("c", lambda: latency(task, hw, args.latency_n))):
        if key in args.only:
            try:
                out[key] = fn()
            except Exception as e:  # noqa: BLE001 - keep the other benchmarks' results
                out[key] = {"error": repr(e)}
            Path(args.out).write_text(json.dumps(out, indent=1, default=str))
    print(json.dumps({k: ({kk: vv for kk, vv in v.items() if kk not in ("per_config", "configs", "scores")}
                          if isinstance(v, dict) else v) for k, v in out.items()}, indent=1, default=str))


if __name__ == "__main__":
    main()
