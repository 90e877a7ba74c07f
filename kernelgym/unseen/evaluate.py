"""Replay a final kernel and the original on the same unseen configs, each config in a process of its own."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from kernelgym.resources import cache_home
from kernelgym.grader import Grader, GraderConfig
from kernelgym.backends import backend_path
from kernelgym.grader.worker import HARNESS_FILES
from kernelgym.hardware import HardwareProfile
from kernelgym.task import Task
from kernelgym.unseen.generator import interpreter_gaps

QUADRANTS = ("both_pass", "opt_regression", "both_fail", "opt_improvement")
_CONFIG_EXTRAS = ("category", "model")


def quadrant(original_correct: list[bool], optimized_correct: list[bool]) -> str:
    """The task's quadrant from per-config correctness: a kernel passes when it is correct on every unseen config
    (the arena's definition). both_pass, opt_regression (original passes, optimized fails), both_fail,
    opt_improvement (original fails, optimized passes)."""
    o, p = all(original_correct), all(optimized_correct)
    return {(True, True): "both_pass", (True, False): "opt_regression", (False, False): "both_fail",
            (False, True): "opt_improvement"}[(o, p)]


#: Wall-clock budget of grading the optimized kernel on all unseen configs, s (`evaluate_unseen`'s default): a kernel
#: that hangs on each would otherwise hold the evaluation for every config's limit in turn.
UNSEEN_BUDGET_S = 1200.0


def _grade_each(task: Task, hardware: HardwareProfile, source: Path, configs: list[dict], work_dir: Path,
                config: GraderConfig, seed: int, budget_s: float | None = None) -> list[dict[str, Any]]:
    """Grade `source`'s editable files on each config separately (a crash fails that config only); once `budget_s`
    has passed, the configs left are not graded and count as failed, saying why."""
    # Only the pristine original shares one worker across configs, and is neither observed nor dynamically checked
    # (observer.py: its kernels are the task's own). A candidate gets a fresh sandboxed process per config: a
    # background process it left behind would otherwise outlive its config and could tamper with the next config's
    # grading directory while the trusted parent writes into it.
    trusted = Path(source).resolve() == task.root.resolve()
    if trusted:
        config = dataclasses.replace(config, observer="off", dynamic_check=False)
    grader = Grader(task, hardware, work_dir, config, configs=[])
    grader.keep_worker = trusted
    if config.warm_worker and trusted:
        grader.start_worker()
    rows, start = [], time.monotonic()
    try:
        for i, cfg in enumerate(configs):
            if budget_s is not None and time.monotonic() - start > budget_s:
                rows.append({"compiled": False, "correct": False, "speedup": None, "time_ms": None,
                             "error": f"not graded: the unseen evaluation's budget of {budget_s:.0f} s was spent"})
                continue
            grader.configs = [{k: v for k, v in cfg.items() if k not in _CONFIG_EXTRAS}]
            g = grader.grade(source, seed=seed + i)
            failed = next((s for s in g.stages if s.passed is False), None)
            rows.append({"compiled": g.compiled, "correct": g.correct, "speedup": g.speedup,
                         "time_ms": (g.configs[0].get("candidate_ms") if g.configs else None),
                         "error": "; ".join(failed.messages)[-500:] if failed else None})
    finally:
        grader.stop_worker()
    return rows


def _original_results(task: Task, hardware: HardwareProfile, configs: list[dict], work_dir: Path,
                      config: GraderConfig, seed: int) -> list[dict[str, Any]]:
    """The original kernel's results, cached per task (its files), hardware, configs and seed: the original
    never changes, so it is graded once (`$KERNELGYM_CACHE_DIR`, default ~/.cache/kernelgym)."""
    h = hashlib.sha256()
    for rel in task.public_files():
        h.update(str(rel).encode() + (task.root / rel).read_bytes())
    for f in [p for p in HARNESS_FILES if p.is_file()] + [backend_path(task.spec.language)]:
        h.update(f.read_bytes())  # the grading code: a change grades the original again
    h.update(json.dumps([configs, seed, hardware.id], sort_keys=True).encode())
    cache = cache_home()
    path = cache / f"original-unseen-{task.name}-{hardware.id}-{h.hexdigest()[:16]}.json"
    if path.is_file():
        return json.loads(path.read_text())
    rows = _grade_each(task, hardware, task.root, configs, work_dir, config, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows))
    return rows


def evaluate_unseen(task: Task, hardware: HardwareProfile, workspace: Path, configs: list[dict[str, Any]],
                    work_dir: Path, grader_config: GraderConfig | None = None, seed: int = 0,
                    seen_speedup: float | None = None, budget_s: float | None = UNSEEN_BUDGET_S) -> dict[str, Any]:
    """Grade the original (pristine task) and optimized (`workspace`) kernels on the same unseen configs; the optimized
    kernel's gradings stop after `budget_s` seconds (None: no budget), the configs left counting as failed.

    Returns a dict: ``configs`` (per config: the config, its category, original/optimized correctness and
    errors, the optimized kernel's speedup over the baseline on a GPU), ``quadrant``, ``regressions`` (configs
    the original passes and the optimized fails), ``conditional_correctness`` (over configs: P(optimized
    correct | original correct); None if the original passes none), ``unseen_speedup`` (mean over configs
    where both are correct and time was measured; None on the interpreter), ``seen_speedup`` and
    ``speedup_gap`` (seen - unseen).

    Coverage: ``not_covered`` lists the regions of the task's config space these configs cannot reach and why
    (`kernelgym.unseen.generator.interpreter_gaps`: on the CPU interpreter, sizes over its budget and dtypes it does
    not run for the task; empty on a GPU). ``covered`` is True only where it is empty, ``coverage`` is ``"full"`` or
    ``"partial"``, and ``claim`` is the quadrant as it may be claimed: the quadrant itself when covered, else e.g.
    ``"both_pass on what was covered"``. The quadrant and the rates are computed over the configs run, so a kernel
    that returns zeros only where the interpreter never runs lands in both_pass with ``covered`` False.
    """
    base = grader_config or GraderConfig()
    original = _original_results(task, hardware, configs, Path(work_dir) / "original",
                                 dataclasses.replace(base, measure=False), seed)
    optimized = _grade_each(task, hardware, Path(workspace), configs, Path(work_dir) / "optimized",
                            dataclasses.replace(base, warm_worker=False), seed, budget_s)
    rows = []
    for cfg, o, p in zip(configs, original, optimized):
        rows.append({"config": {k: v for k, v in cfg.items() if k not in _CONFIG_EXTRAS},
                     "category": cfg.get("category"), "original_correct": o["correct"],
                     "optimized_correct": p["correct"], "original_error": o["error"], "optimized_error": p["error"],
                     "speedup": p["speedup"] if o["correct"] and p["correct"] else None})
    o_ok = [r["original_correct"] for r in rows]
    p_ok = [r["optimized_correct"] for r in rows]
    both = sum(o and p for o, p in zip(o_ok, p_ok))
    speedups = [r["speedup"] for r in rows if r["speedup"] is not None]
    unseen = statistics.fmean(speedups) if speedups else None
    not_covered = interpreter_gaps(task) if hardware.interpreter else []
    quad = quadrant(o_ok, p_ok)
    return {"configs": rows, "quadrant": quad, "covered": not not_covered,
            "coverage": "partial" if not_covered else "full", "not_covered": not_covered,
            "claim": f"{quad} on what was covered" if not_covered else quad,
            "regressions": sum(o and not p for o, p in zip(o_ok, p_ok)),
            "conditional_correctness": both / sum(o_ok) if any(o_ok) else None,
            "original_passed": sum(o_ok), "optimized_passed": sum(p_ok), "n": len(rows),
            "unseen_speedup": unseen, "seen_speedup": seen_speedup,
            "speedup_gap": (seen_speedup - unseen) if (seen_speedup is not None and unseen is not None) else None,
            "interpreter": hardware.interpreter}
