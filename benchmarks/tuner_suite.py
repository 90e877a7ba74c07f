"""The tuner over the Triton suite (issue 28): one tuner episode per Triton task, several tasks at once in parallel
processes sharing each GPU, plus the main job (`kernelgym run --task triton-softmax --policy tuner`), in one JSON and
a short Markdown summary.

    source benchmarks/gpu_setup.sh
    python benchmarks/tuner_suite.py --out $OUT [--gpus 4] [--parallel 6] [--task-budget-s 210]
                                     [--total-budget-s 480] [--only A,B] [--skip C] [--no-main-job]

`--gpus N` spreads the tasks round-robin over N GPUs, `--parallel` processes per GPU (each process sees its GPU
alone, by CUDA_VISIBLE_DEVICES, which the env's sandbox passes on to its graders); the main job runs on GPU 0 in a
process of its own. Fewer processes per GPU make every measure cheaper: on one H200 with 12 tasks at once a tuner
measure took 25-80 s, and 19 of 24 tasks ran out of their 120 s after the original's.

Per task, in a process of its own (spawned; torch's threads are its share of the cores):

1. A tuner episode (`load_policy("tuner", time_budget_s=--task-budget-s)`; the env's `--max-steps`), graded as the
   env grades a submit: the graded speedup of what the tuner submitted, the grade's noise band (mean over the
   configs of each config's per-round speedup band), the outcome, and the tuner's summary (what it tried and why it
   submitted what it did) and its log of variants.
2. `--baseline-grades` (1) gradings of the unchanged baseline: the baseline timed against itself, so its
   |speedup - 1| and its noise band are the grader's noise for that task.

Per task the record also counts the tuner's measures (``screens``, ``full``, and their mean seconds) and keeps its
reasons for stopping (``stopped``: the summary's "budget reached" lines), so a run shows where the time went.

Then per task ``slower_beyond_noise``: the tuner's submission graded below 1 by more than the baseline's noise
(max of |speedup - 1| and the band's half width). The issue's targets: the main job >= 1.2x; >= 1.1x on at least 8
Triton tasks; no task slower beyond the noise.

The main job runs first, in a process of its own, through the CLI with its defaults (as a user runs it). A task
whose process would start after `--total-budget-s` is listed as not run. The JSON is rewritten as each task ends.
Where a GPU is shared, the tasks' gradings take turns for their timed runs (`GraderConfig.gpu_schedule`, on unless
`--no-gpu-schedule`; 2026-12-04, without it, one task's grade had its speedup withheld for a noise band of +-0.52
under 8-way sharing), but the tuner's own measures (bench.py in the workspace) do not: parallel tasks add to each
other's screening noise, which the baseline's gradings, taken in the same conditions, show. The main job runs as a
user runs it, with the CLI's defaults. On the CPU interpreter nothing is timed: speedups are null, every line says `untimed (CPU interpreter)`, and
the run checks only the plumbing.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
#: Issue 28's targets.
MAIN_JOB_TARGET, TASK_TARGET, TASKS_AT_TARGET = 1.2, 1.1, 8


def band_half_width(grade: dict) -> float | None:
    """Mean over the timed configs of half the width of each config's noise band (a speedup), or None untimed."""
    bands = [c["noise_band"] for c in grade.get("configs", []) if c.get("noise_band")]
    return statistics.mean((hi - lo) / 2 for lo, hi in bands) if bands else None


def _grade_row(grade: dict) -> dict:
    row = {"speedup": grade.get("speedup"), "score": grade.get("score"), "correct": grade.get("correct"),
           "outcome": grade.get("outcome"), "noise_half_width": band_half_width(grade),
           "per_config_speedup": [c.get("speedup") for c in grade.get("configs", [])]}
    if grade.get("speedup") is None:  # why no speedup was paid (withheld, incorrect, a timing check): kept to read
        row["checks"] = grade.get("checks")
        row["errors"] = [str(c.get("error"))[:300] for c in grade.get("configs", []) if c.get("error")][:5]
    return row


def run_task(task: str, run_dir: str, budget_s: float, max_steps: int, baseline_grades: int, threads: int,
             deadline: float, gpu_schedule: bool = True) -> dict:
    """One task: a tuner episode, then the baseline's gradings. Returns the task's record (see the module doc).
    `gpu_schedule`: `GraderConfig.gpu_schedule` for the gradings (their timed runs take turns on the GPU)."""
    if time.time() > deadline:
        return {"task": task, "status": "not run: the total budget was spent before it started"}
    import torch

    from kernelgym.env import KernelArenaEnv
    from kernelgym.errors import KernelGymError
    from kernelgym.grader import GraderConfig
    from kernelgym.policy import load_policy
    from kernelgym.rollout import rollout

    torch.set_num_threads(threads)
    start = time.monotonic()
    try:
        env = KernelArenaEnv(task, run_dir=run_dir, max_steps=max_steps, max_wall_s=budget_s + 120, spawn_ahead=False,
                             grader=GraderConfig(gpu_schedule=gpu_schedule))
    except KernelGymError as e:  # e.g. a task this hardware cannot run: said, not hidden
        return {"task": task, "status": f"not run: {type(e).__name__}: {e}"}
    try:
        policy = load_policy("tuner", time_budget_s=budget_s, verbose=False)
        result = rollout(env, policy, seed=0)
        record = {"task": task, "status": "ran", "interpreter": env.hardware.interpreter,
                  "tuner": {**_grade_row(result["grade"]), "steps": result["steps"], "wall_s": round(result["wall_s"], 1),
                            "policy_error": result["policy_error"], "episode_outcome": result["outcome"]},
                  "submitted": next((x for x in policy.summary.splitlines() if x.startswith("Submitted:")), None),
                  "summary": policy.summary, "variants": policy.log, **measure_counts(policy.log),
                  "stopped": [x.strip()[2:] for x in policy.summary.splitlines() if "budget reached" in x],
                  "gpu": os.environ.get("CUDA_VISIBLE_DEVICES")}
        baseline = []
        for seed in range(baseline_grades):
            env.reset(seed=100 + seed)
            *_, info = env.step({"kind": "submit"})
            baseline.append(_grade_row(info.get("grade", {})))
        record["baseline"] = baseline
    except Exception as e:  # reported, never hidden: a benchmark that fails says where
        record = {"task": task, "status": f"error: {type(e).__name__}: {e}"}
    finally:
        env.close()
    record["wall_s"] = round(time.monotonic() - start, 1)
    return judge(record)


def measure_counts(log: list[dict]) -> dict:
    """How many screening and full measures the tuner ran, and their mean seconds (None where there were none)."""
    out = {}
    for kind in ("screen", "full"):
        secs = [e["seconds"] for e in log if e.get("measure") == kind and e.get("seconds") is not None]
        out[kind + "s" if kind == "screen" else kind] = len(secs)
        out[f"{kind}_mean_s"] = round(statistics.mean(secs), 1) if secs else None
    return out


def _pin_gpu(gpu: int | None) -> None:
    """Worker initializer: this process (and what it starts) sees GPU `gpu` alone; None leaves the GPUs as they are."""
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)


def judge(record: dict) -> dict:
    """Adds the baseline's noise and whether the tuner's submission graded slower than the baseline beyond it."""
    speedup = (record.get("tuner") or {}).get("speedup")
    base = [b for b in record.get("baseline", []) if b.get("speedup") is not None]
    if speedup is None or not base:
        record["timed"] = False
        record["label"] = "untimed (CPU interpreter)" if record.get("interpreter") else "untimed"
        return record
    noise = max(max(abs(b["speedup"] - 1) for b in base),
                max((b["noise_half_width"] or 0.0) for b in base))
    record.update(timed=True, baseline_noise=noise, slower_beyond_noise=speedup < 1 - noise,
                  at_target=speedup >= TASK_TARGET, label=f"{speedup:.3f}x (noise {noise:.3f})")
    return record


def run_main_job(run_dir: str, timeout_s: float, policy_config: str | None, task: str = "triton-softmax") -> dict:
    """`kernelgym run --task TASK --policy tuner` as a user runs it (`policy_config`: a --policy-config, or None); its
    graded speedup from results.json. Past `timeout_s` its process group is killed and the record says so."""
    import signal

    start = time.monotonic()
    cmd = [sys.executable, "-m", "kernelgym.cli", "run", "--task", task, "--policy", "tuner",
           "--run-dir", run_dir] + (["--policy-config", policy_config] if policy_config else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout_s)
        status = f"exit {proc.returncode}"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the CLI and the grading processes it started
        output, _ = proc.communicate()
        status = f"killed after {timeout_s:.0f} s (--main-job-timeout-s)"
    runs = sorted(Path(run_dir).glob("*/results.json"))
    results = json.loads(runs[-1].read_text()) if runs else []
    grade = results[0].get("grade", {}) if results else {}
    speedup = grade.get("speedup")
    return {"command": "kernelgym " + " ".join(cmd[3:]), "status": status,
            "wall_s": round(time.monotonic() - start, 1), **_grade_row(grade),
            "reward": results[0].get("reward") if results else None,
            "at_target": None if speedup is None else speedup >= MAIN_JOB_TARGET,
            "label": "untimed (CPU interpreter)" if grade.get("interpreter") else
            (f"{speedup:.3f}x" if speedup is not None else f"no grade ({status})"),
            "output_tail": (output or "")[-4000:]}


def summary_markdown(doc: dict) -> str:
    """The short Markdown summary: the main job, the targets, one row per task."""
    rows = doc["tasks"]
    timed = [r for r in rows if r.get("timed")]
    lines = [f"# Tuner over the Triton suite ({doc['machine']}, {doc['date']}, {doc['wall_s']} s)", ""]
    mj = doc.get("main_job")
    if mj:
        lines.append(f"- main job (`{mj['command']}`): {mj['label']}, reward {mj['reward']} "
                     f"(target >= {MAIN_JOB_TARGET}x; {mj['wall_s']} s)")
    if timed:
        lines.append(f"- tasks at >= {TASK_TARGET}x as graded: {sum(r['at_target'] for r in timed)} of {len(timed)} "
                     f"timed (target: {TASKS_AT_TARGET})")
        lines.append(f"- tasks graded slower than the baseline beyond its noise: "
                     f"{[r['task'] for r in timed if r['slower_beyond_noise']] or 'none'}")
    else:
        lines.append("- nothing was timed (CPU interpreter): the rewards of 120 mean correct, not timed; the run "
                     "checks the plumbing only")
    lines += ["", "| task | graded speedup | baseline noise | submitted | measures: screens / full (mean s) | "
                  "stopped | steps | wall s |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t = r.get("tuner") or {}
        noise = f"{r['baseline_noise']:.3f}" if r.get("timed") else "-"
        what = (r.get("submitted") or r.get("status", "")).replace("|", "/")[:120]
        counts = (f"{r['screens']} ({r['screen_mean_s']}) / {r['full']} ({r['full_mean_s']})" if "screens" in r else "-")
        stopped = "; ".join(x.split(" stopped")[0] for x in r.get("stopped") or []).replace("|", "/") or "-"
        lines.append(f"| {r['task']} | {r.get('label', r.get('status'))} | {noise} | {what} | {counts} | {stopped} "
                     f"| {t.get('steps', '-')} | {r.get('wall_s', '-')} |")
    return "\n".join(lines) + "\n"


def triton_tasks(only: set[str], skip: set[str]) -> list[str]:
    from kernelgym.discovery import discover_tasks
    names = [n for n, t in sorted(discover_tasks().items()) if t.spec.language == "triton"]
    unknown = (only | skip) - set(names)
    if unknown:
        raise SystemExit(f"unknown Triton task(s): {', '.join(sorted(unknown))}; known: {', '.join(names)}")
    return [n for n in names if (not only or n in only) and n not in skip]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for tuner_suite.json and tuner_suite.md")
    ap.add_argument("--gpus", type=int, default=1, help="GPUs to spread the tasks over (round-robin)")
    ap.add_argument("--parallel", type=int, default=6, help="task processes at once per GPU")
    ap.add_argument("--task-budget-s", type=float, default=210.0, help="each task's search time (the tuner's time_budget_s)")
    ap.add_argument("--total-budget-s", type=float, default=480.0, help="no task starts after this many seconds")
    ap.add_argument("--max-steps", type=int, default=200, help="each episode's step budget")
    ap.add_argument("--baseline-grades", type=int, default=1, help="gradings of the unchanged baseline per task")
    ap.add_argument("--only", default="", help="comma-separated task names")
    ap.add_argument("--skip", default="", help="comma-separated task names")
    ap.add_argument("--no-main-job", action="store_true", help="skip the main job (`kernelgym run --task triton-softmax --policy tuner`)")
    ap.add_argument("--main-job-timeout-s", type=float, default=470.0, help="the main job is killed after this")
    ap.add_argument("--main-job-config", default=None, help="a --policy-config for the main job (default: none)")
    ap.add_argument("--main-job-task", default="triton-softmax", help="the main job's task (default: triton-softmax)")
    ap.add_argument("--gpu-schedule", action=argparse.BooleanOptionalAction, default=True,
                    help="GraderConfig.gpu_schedule for the tasks' gradings: their timed runs take turns on each GPU")
    ap.add_argument("--run-dir", default="/tmp/kg-tuner-suite")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = triton_tasks({t for t in args.only.split(",") if t}, {t for t in args.skip.split(",") if t})
    start = time.time()
    deadline = start + args.total_budget_s
    gpus = max(1, args.gpus)
    threads = max(1, (os.cpu_count() or 1) // (args.parallel * gpus + (0 if args.no_main_job else 1)))
    doc = {"machine": os.uname().nodename, "date": time.strftime("%Y-%m-%d"), "args": vars(args), "tasks": [],
           "main_job": None, "wall_s": 0}

    def write() -> None:
        doc["wall_s"] = round(time.time() - start, 1)
        doc["tasks"].sort(key=lambda r: r["task"])
        (out / "tuner_suite.json").write_text(json.dumps(doc, indent=1, default=str))
        (out / "tuner_suite.md").write_text(summary_markdown(doc))

    run_root = Path(args.run_dir)
    pin = (lambda g: g) if gpus > 1 else (lambda g: None)  # one GPU: leave CUDA_VISIBLE_DEVICES as it is
    pools = [ProcessPoolExecutor(max_workers=args.parallel + (1 if g == 0 and not args.no_main_job else 0),
                                 mp_context=mp.get_context("spawn"), initializer=_pin_gpu, initargs=(pin(g),))
             for g in range(gpus)]
    try:
        main_job = None if args.no_main_job else pools[0].submit(run_main_job, str(run_root / "main-job"),
                                                                 args.main_job_timeout_s, args.main_job_config,
                                                                 args.main_job_task)
        pending = {pools[i % gpus].submit(run_task, t, str(run_root / t), args.task_budget_s, args.max_steps,
                                          args.baseline_grades, threads, deadline, args.gpu_schedule): t
                   for i, t in enumerate(tasks)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                task = pending.pop(f)
                try:
                    record = f.result()
                except Exception as e:  # a worker that died: said per task
                    record = {"task": task, "status": f"error: {type(e).__name__}: {e}"}
                doc["tasks"].append(record)
                print(f"{record['task']}: {record.get('label', record.get('status'))}"
                      + (f" [{record['screens']} screens, {record['full']} full]" if "screens" in record else ""),
                      flush=True)
                write()
        if main_job is not None:
            doc["main_job"] = main_job.result()
            print(f"main job: {doc['main_job']['label']}", flush=True)
    finally:
        for pool in pools:
            pool.shutdown()
    write()
    print((out / "tuner_suite.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
