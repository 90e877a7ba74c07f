"""Grades the reference-format test folders (tests/data/reference_tasks) on the GPU with kernelgym's loader, and
checks that the folders' own commands, run directly, give the same compile/correctness verdicts.

    python benchmarks/reference_tasks_check.py --out benchmarks/results/reference_tasks_check.json

Per supported task: the unchanged baseline (expected: compile and correct, speedup about 1, score about 220), a
wrong edit (expected: score 20) and, for each, the commands' own verdicts beside kernelgym's; per unsupported task,
the reason. Each grade's per-case times and the timing method the helpers used (cuda_graph or cuda_event_fallback)
are in the JSON. Exits 1 when a baseline is not correct, a wrong edit passes, or the verdicts disagree.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernelgym.grader import GraderConfig
from kernelgym.hardware import detect_profile
from kernelgym.reference_tasks import discover_reference_tasks, unsupported_reason
from kernelgym.reference_tasks.grader import ReferenceGrader, command_line, prepare_dir

ROOT = Path(__file__).resolve().parent.parent
#: An edit that breaks correctness, per test folder (file, old, new).
WRONG = {"vllm_silu_and_mul": ("source/silu_and_mul.py", "* b\n", "* b * 2.0\n"),
         "rocmbench_add_kernel": ("test_add_kernel.py", "x + y, mask", "x - y, mask")}


def workspace(task, edit=None) -> Path:
    ws = Path(tempfile.mkdtemp(prefix="kg-ref-ws-"))
    prepare_dir(task, ws / "w")
    if edit:
        rel, old, new = edit
        path = ws / "w" / rel
        path.write_text(path.read_text().replace(old, new, 1))
    return ws / "w"


def own_verdicts(task, ws: Path) -> dict:
    """The folder's compile and correctness commands run directly (no sandbox) on `ws`'s sources."""
    dest = Path(tempfile.mkdtemp(prefix="kg-ref-own-")) / "t"
    dest.mkdir()
    prepare_dir(task, dest, ws)
    out = {}
    for stage in ("compile", "correctness"):
        ok = all(subprocess.run(command_line(c), shell=True, cwd=dest, capture_output=True, timeout=1800,
                                env=os.environ.copy()).returncode == 0 for c in getattr(task.spec, f"{stage}_command"))
        report = dest / "build" / f"{stage}_report.json"
        if ok and report.exists():
            ok = json.loads(report.read_text()).get("status") == "ok"
        out[stage] = ok
        if not ok:
            break
    return out


def methods(grading_dir: Path) -> list:
    """The helpers' timing methods in the last candidate report under `grading_dir` (cuda_graph, ...)."""
    found = []
    for name in ("build/performance_report.json", "perf/benchmark_results.json"):
        for path in sorted(grading_dir.glob(f"grading-*/{name}")):
            try:
                found = [c.get("benchmark_method") for c in json.loads(path.read_text())]
            except (OSError, ValueError):
                pass
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks-dir", default=str(ROOT / "tests" / "data" / "reference_tasks"))
    ap.add_argument("--out", default="reference_tasks_check.json")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sandbox", default="bwrap", choices=("bwrap", "none"))
    args = ap.parse_args()
    hw = detect_profile()
    tasks, problems = discover_reference_tasks(args.tasks_dir)
    report = {"hardware": hw.id, "interpreter": hw.interpreter, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ",
              time.gmtime()), "problems": [p.message for p in problems], "tasks": {}}
    failed = bool(problems)
    for name, task in tasks.items():
        reason = unsupported_reason(task, hw)
        if reason:
            report["tasks"][name] = {"unsupported": reason}
            print(f"{name}: unsupported on {hw.id}: {reason}", flush=True)
            continue
        entry = {}
        for label, edit in (("baseline", None), ("wrong", WRONG.get(task.root.name))):
            if label == "wrong" and edit is None:
                continue
            ws = workspace(task, edit)
            work = Path(tempfile.mkdtemp(prefix="kg-ref-grading-"))
            t = time.monotonic()
            grade = ReferenceGrader(task, hw, work, GraderConfig(sandbox=args.sandbox), rounds=args.rounds).grade(ws)
            own = own_verdicts(task, ws)
            kg = {"compile": bool(grade.stages[0].passed)}
            if grade.stages[0].passed:
                kg["correctness"] = bool(grade.stages[1].passed)
            entry[label] = {"score": grade.score, "speedup": grade.speedup, "wall_s": time.monotonic() - t,
                            "grade": grade.to_dict(), "own_verdicts": own, "kernelgym_verdicts": kg,
                            "agree": own == kg, "timing_methods": methods(work)}
            ok = own == kg and (grade.correct if label == "baseline" else not grade.correct)
            failed |= not ok
            sp = "-" if grade.speedup is None else f"{grade.speedup:.3f}x"
            print(f"{name} {label}: score {grade.score:.1f}, speedup {sp}, verdicts agree {own == kg}, "
                  f"methods {entry[label]['timing_methods']}", flush=True)
        report["tasks"][name] = entry
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    print(f"wrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
