"""Offline: replay every finished episode of a run on unseen configs and summarize (`kernelgym unseen RUN_DIR`)."""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Callable

from kernelgym.grader import GraderConfig
from kernelgym.hardware import detect_profile
from kernelgym.discovery import get_task
from kernelgym.errors import TaskSpecError
from kernelgym.task import load_task
from kernelgym.unseen.evaluate import QUADRANTS, evaluate_unseen
from kernelgym.unseen.store import unseen_configs


def replay_run(run_dir: Path, seed: int = 0, sandbox: str = "bwrap",
               progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
    """Evaluate the final kernel of every graded episode under `run_dir` on unseen configs.

    Returns the summary (also written to ``run_dir/unseen_summary.json``): quadrant counts, conditional
    correctness = P(optimized passes all unseen configs | original passes all) over episodes, the same over
    configs, mean seen versus unseen speedup, and ``partially_covered``: how many episodes' evaluations left part
    of the config space out (each result's ``not_covered`` says what; every one on the CPU interpreter).

    Raises:
        FileNotFoundError: `run_dir` holds no graded episodes.
        TaskSpecError: an episode is of a reference-format task (its scripts fix their shapes: nothing unseen to replay).
    """
    run_dir = Path(run_dir).resolve()
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir}: no such run directory (`kernelgym run` prints the one it writes)")
    # The run's own episodes, or those of the runs in it: never a deeper match, since an episode's workspace is the
    # agent's to fill (a planted episodes/<id>/grade.json there would be replayed as graded).
    episodes = sorted(p.parent for pattern in ("episodes/*/grade.json", "*/episodes/*/grade.json")
                      for p in run_dir.glob(pattern)
                      if (p.parent / "episode.json").is_file())
    if not episodes:
        raise FileNotFoundError(f"{run_dir}: no graded episodes (episodes/<id>/grade.json) found")
    results = []
    for k, ep in enumerate(episodes):
        meta = json.loads((ep / "episode.json").read_text())
        seen = json.loads((ep / "grade.json").read_text())
        task_dir = Path(meta["task_dir"])
        if (task_dir / "config.yaml").is_file() and not (task_dir / "task.yaml").is_file():
            raise TaskSpecError(f"{ep.name}: {task_dir.name} is a task in the reference arena's format, whose scripts fix "
                             f"their own shapes: it has no unseen configs to replay (docs/REFERENCE_TASKS.md)")
        task = load_task(task_dir) if task_dir.is_dir() else get_task(meta["task"])
        hardware = detect_profile(meta["hardware"])
        if progress:
            progress(k, len(episodes), ep.name)
        configs, _ = unseen_configs(task, hardware, seed)
        r = evaluate_unseen(task, hardware, ep / "workspace", configs, ep / f"unseen-replay-{seed}",
                            GraderConfig(sandbox=sandbox), seed=seed, seen_speedup=seen.get("speedup"))
        results.append({"episode": ep.name, "task": task.env_id, "seen_score": seen.get("score"), **r})
    orig_pass = [r for r in results if r["quadrant"] in ("both_pass", "opt_regression")]
    cfg_orig = sum(r["original_passed"] for r in results)
    cfg_both = sum(sum(c["original_correct"] and c["optimized_correct"] for c in r["configs"]) for r in results)
    seen_sp = [r["seen_speedup"] for r in results if r["seen_speedup"] is not None]
    unseen_sp = [r["unseen_speedup"] for r in results if r["unseen_speedup"] is not None]
    summary = {
        "run_dir": str(run_dir), "seed": seed, "episodes": len(results),
        "quadrants": {q: sum(r["quadrant"] == q for r in results) for q in QUADRANTS},
        "conditional_correctness": (sum(r["quadrant"] == "both_pass" for r in orig_pass) / len(orig_pass)
                                    if orig_pass else None),
        "conditional_correctness_configs": cfg_both / cfg_orig if cfg_orig else None,
        "seen_speedup_mean": statistics.fmean(seen_sp) if seen_sp else None,
        "unseen_speedup_mean": statistics.fmean(unseen_sp) if unseen_sp else None,
        "interpreter": any(r["interpreter"] for r in results),
        # Quadrant counts are over the configs run: episodes whose evaluation left part of the space out are
        # counted here, so a both_pass among them reads "both_pass on what was covered".
        "partially_covered": sum(not r.get("covered", True) for r in results),
        "results": results,
    }
    (run_dir / "unseen_summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary
