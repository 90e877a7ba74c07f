"""Grades every native (CUDA C++) task's unchanged baseline with the real grader on a GPU, a few times each, and writes
JSON plus a markdown table.

What each task should show:
- cuda2cuda: the baseline graded as a submission, `--n` times: correct, score 220 within noise (speedup ~1.0).
- torch2cuda: the baseline is the PyTorch module through ATen, the bar and not an answer. Graded `--n` times with the
  static check and the outside observer off (the baseline timed against itself: 220 within noise), then once with
  the defaults, which must refuse it (the static check finds torch compute: correctness fails, score 20). The known
  from-scratch answer (tests/kernels/cuda/<task>/) is graded once for correctness (no timing: it is slow on purpose)
  with the defaults, the observer included where ncu is found: it must be correct.

Every build (baselines and answers) runs first, side by side (`--jobs`), into one cache, so the gradings find them
there: a cold build takes ~30 s per task on the H200 host, and the twelve took 45 s side by side. `--budget-s` bounds
the wall time: a grading that would start after it is left out and listed as not run. All eight tasks with `--n 3`
take about 11 minutes on the H200, past one 10-minute call: split them with `--tasks` (each call builds only its
own), or pass the same `--cache-dir` to a later call on a machine kept warm.

    python benchmarks/native_tasks_check.py --tasks cuda-attention,cuda-cross-entropy,cuda-gelu,cuda-layernorm
    python benchmarks/native_tasks_check.py --tasks cuda-rmsnorm,cuda-silu-and-mul,cuda-softmax,cuda-swiglu-mlp
        [--n 3] [--budget-s 540] [--jobs 8] [--out native.json] [--md native.md]

Exits 1 when an expectation above fails (a grading left out for the budget is not a failure; the table says so).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ANSWERS = REPO / "tests" / "kernels" / "cuda"
#: A baseline graded against itself scores 220 (20 compile + 100 correct + 100 x speedup); the band allows the
#: timing noise the grader reports for a kernel against itself.
SCORE_BAND = 5.0


def native_tasks(names: list[str] | None) -> list:
    """The built-in cuda tasks (all of them, or `names`, in that order)."""
    from kernelgym.discovery import discover_tasks, get_task
    if names:
        return [get_task(n) for n in names]
    return [t for n, t in sorted(discover_tasks().items()) if t.spec.language == "cuda"]


def workspace(task, scratch: Path, answer: Path | None = None) -> Path:
    """A workspace holding the task's public files, with the editable sources of `answer` over them."""
    ws = scratch / "ws" / (task.spec.id + ("-answer" if answer else ""))
    ws.mkdir(parents=True)
    for rel in task.public_files():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(task.root / rel, ws / rel)
    for f in task.spec.editable_files if answer else []:
        shutil.copy(answer / f, ws / f)
    return ws


def build_all(jobs: list[tuple], hardware, n_jobs: int) -> dict[str, dict]:
    """Build every (label, task, workspace) side by side into the cache the gradings read; returns per label the
    build's seconds, success and the log's tail where it failed."""
    from kernelgym.backends import get_backend
    from kernelgym.grader import build as builds
    from kernelgym.grader.grader import BUILD_TIMEOUT_S

    def one(job):
        label, task, ws = job
        start = time.monotonic()
        r = builds.build(get_backend(task.spec.language), ws, task.spec.editable_files, task.spec.entry_point,
                         sandbox="bwrap", timeout_s=BUILD_TIMEOUT_S, arch=hardware.arch)
        return label, {"build_s": round(time.monotonic() - start, 1), "ok": r.ok, "cached": r.cached,
                       "log_tail": None if r.ok else r.log[-3000:]}
    with ThreadPoolExecutor(max(1, n_jobs)) as pool:
        return dict(pool.map(one, jobs))


def grade(grader, ws: Path, seed: int) -> dict:
    """One grading of `ws`: score, speedup, correct, the provenance checks, wall time."""
    start = time.monotonic()
    g = grader.grade(ws, seed=seed)
    messages = [m for st in g.stages for m in st.messages]
    return {"score": round(g.score, 2), "speedup": g.speedup, "correct": g.correct, "compiled": g.compiled,
            "checks": g.checks, "wall_s": round(time.monotonic() - start, 1),
            "provenance": next((m for m in messages if m.startswith("provenance")), None),
            "summary": None if g.correct else g.summary()[-2500:]}


def check_task(task, hardware, scratch: Path, n: int, deadline: float, workspaces: dict) -> dict:
    """Every grading of one task (see the module docstring); gradings past `deadline` are listed as not run."""
    from kernelgym.grader import Grader, GraderConfig
    torch2 = task.spec.kind.startswith("torch2")
    row = {"task": task.name, "kind": task.spec.kind, "baseline": [], "not_run": [], "failures": []}
    # A torch2* baseline is the PyTorch module: every provenance check refuses it by design.
    unchecked = GraderConfig(static_check=False, dynamic_check=False, observer="off")
    plan = [("baseline", unchecked if torch2 else GraderConfig(), n)]
    if torch2:
        plan += [("refused", GraderConfig(), 1), ("answer", GraderConfig(measure=False), 1)]
    for tag, config, count in plan:
        if time.monotonic() > deadline:
            row["not_run"] += [f"{tag} {seed}" for seed in range(count)]
            continue
        ws = workspaces.get(f"{task.name}/answer" if tag == "answer" else task.name)
        if ws is None:
            row["not_run"].append(f"{tag}: no known answer in {ANSWERS}")
            continue
        # One grader per kind of grading, as an episode has: its worker, baseline build and references are reused.
        grader = Grader(task, hardware, scratch / "work" / f"{task.spec.id}-{tag}", config)
        try:
            for seed in range(count):
                if time.monotonic() > deadline:
                    row["not_run"].append(f"{tag} {seed}")
                    continue
                result = grade(grader, ws, seed)
                print(f"{task.name} {tag} {seed}: score {result['score']}, speedup {result['speedup']}, correct "
                      f"{result['correct']}, checks {result['checks']}, wall {result['wall_s']} s", flush=True)
                if tag == "baseline":
                    row["baseline"].append(result)
                    if not result["correct"] or abs(result["score"] - 220.0) > SCORE_BAND:
                        row["failures"].append(f"baseline grading {seed}: score {result['score']}, correct "
                                               f"{result['correct']}\n{result['summary'] or ''}")
                elif tag == "refused":
                    row["refused"] = result
                    if result["correct"] or not result["provenance"]:
                        row["failures"].append(f"the unchanged torch2cuda baseline was not refused: {result}")
                else:
                    row["answer"] = result
                    if not result["correct"]:
                        row["failures"].append(f"the from-scratch answer is not correct:\n{result['summary']}")
        finally:
            grader.stop_worker()
    return row


def markdown(rows: list[dict], builds: dict, hardware_name: str) -> str:
    """The table: one row per task."""
    lines = [f"Native tasks on {hardware_name}: the unchanged baseline graded n times (torch2cuda: static check and "
             "observer off, since the baseline is the PyTorch module), the torch2cuda baseline graded with the "
             "defaults (must be refused), the from-scratch answer graded for correctness.", "",
             "| task | kind | build s | baseline scores | speedups | refused with defaults | answer correct | "
             "not run | pass |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b = builds.get(r["task"], {})
        scores = ", ".join(f"{g['score']:.1f}" for g in r["baseline"]) or "-"
        speedups = ", ".join(f"{g['speedup']:.3f}" if g["speedup"] is not None else "-" for g in r["baseline"]) or "-"
        refused = ("yes" if not r["refused"]["correct"] else "NO") if "refused" in r else "n/a"
        answer = ("yes" if r["answer"]["correct"] else "NO") if "answer" in r else "n/a"
        lines.append(f"| {r['task']} | {r['kind']} | {b.get('build_s', '-')} | {scores} | {speedups} | {refused} | "
                     f"{answer} | {', '.join(r['not_run']) or '-'} | {'yes' if not r['failures'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: every cuda task)")
    parser.add_argument("--n", type=int, default=3, help="gradings of each baseline")
    parser.add_argument("--budget-s", type=float, default=540.0, help="wall limit, s: later gradings are not run")
    parser.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1), help="builds side by side")
    parser.add_argument("--cache-dir", default="", help="build cache (default: a fresh one, so builds run cold)")
    parser.add_argument("--out", default="native_tasks.json")
    parser.add_argument("--md", default="native_tasks.md")
    args = parser.parse_args()
    start = time.monotonic()
    deadline = start + args.budget_s
    scratch = Path(tempfile.mkdtemp(prefix="kg-native-check-"))
    os.environ["KERNELGYM_CACHE_DIR"] = args.cache_dir or str(scratch / "cache")
    from kernelgym.hardware import detect_profile
    hardware = detect_profile()
    tasks = native_tasks([t for t in args.tasks.split(",") if t])
    workspaces, jobs = {}, []
    for task in tasks:
        workspaces[task.name] = workspace(task, scratch)
        jobs.append((task.name, task, workspaces[task.name]))
        if task.spec.kind.startswith("torch2") and (ANSWERS / task.spec.id).is_dir():
            workspaces[f"{task.name}/answer"] = workspace(task, scratch, ANSWERS / task.spec.id)
            jobs.append((f"{task.name}/answer", task, workspaces[f"{task.name}/answer"]))
    print(f"{len(tasks)} tasks on {hardware.name}; building {len(jobs)} source sets, {args.jobs} at a time; cache "
          f"{os.environ['KERNELGYM_CACHE_DIR']}", flush=True)
    builds = build_all(jobs, hardware, args.jobs)
    for label, b in builds.items():
        print(f"build {label}: {b['build_s']} s{' (cached)' if b['cached'] else ''}{'' if b['ok'] else ' FAILED'}")
    print(f"builds done in {time.monotonic() - start:.0f} s", flush=True)
    rows = []
    for task in tasks:
        if not builds[task.name]["ok"]:
            rows.append({"task": task.name, "kind": task.spec.kind, "baseline": [], "not_run": ["all: build failed"],
                         "failures": [f"the baseline does not build:\n{builds[task.name]['log_tail']}"]})
            continue
        rows.append(check_task(task, hardware, scratch, args.n, deadline, workspaces))
    report = {"hardware": hardware.name, "n": args.n, "budget_s": args.budget_s,
              "wall_s": round(time.monotonic() - start, 1), "builds": builds, "tasks": rows}
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    Path(args.md).write_text(markdown(rows, builds, hardware.name))
    print(Path(args.md).read_text())
    failed = [(r["task"], f) for r in rows for f in r["failures"]]
    for name, f in failed:
        print(f"FAIL {name}: {f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
