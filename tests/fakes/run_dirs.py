"""Synthetic run directories of `kernelgym run`, in its on-disk format, for the report and compare tests.

`make_run_dir` writes run.json, results.json, trajectories.jsonl and episodes/<id>/{episode.json, grade.json} as
cmd_run/run_task, the env and the TrajectoryRecorder write them (tests/test_report.py checks the key sets against
a real run's), without grading anything: a test of thousands of episodes stays fast.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernelgym.grader.outcome import decide
from kernelgym.grader.score import arena_score
from kernelgym.rollout import episode_outcome
from kernelgym.usage import StepUsage, episode_totals
from kernelgym.wrappers.trajectory import TRAJECTORY_FORMAT

CONFIGS = ({"rows": 4, "hidden": 128, "dtype": "float16"}, {"rows": 3, "hidden": 1000, "dtype": "bfloat16"})


def fake_grade(task: str, *, compiled: bool = True, correct: bool = True, speedup: float | None = None,
               hardware: str = "h200", fault: str | None = None) -> dict[str, Any]:
    """A grade dict as `Grade.to_dict()` gives it: every config at `speedup` (None: not timed, as on the CPU
    interpreter), the outcome decided by `kernelgym.grader.outcome.decide` as the grader does."""
    interpreter = speedup is None and hardware == "cpu-interpreter"
    timed = compiled and correct and speedup is not None
    configs = [{"config": c, "correct": bool(compiled and correct), "max_abs_err": 0.001, "error": None,
                **({"baseline_ms": 0.02, "candidate_ms": 0.02 / speedup, "speedup": speedup,
                    "noise_band": [speedup * 0.99, speedup * 1.01]} if timed else {})} for c in CONFIGS]
    stages = [{"name": "compile", "passed": compiled, "messages": []},
              {"name": "correctness", "passed": correct if compiled else None, "messages": []},
              {"name": "performance", "passed": True if timed else None, "messages": []}]
    checks = {"static_check": "passed", "dynamic_check": "passed", "observer": "passed"}
    return {"task": f"KernelArena/{task}-v0", "hardware": hardware, "interpreter": interpreter, "stages": stages,
            "configs": configs, "speedup": speedup if timed else None, "speedup_geomean": speedup if timed else None,
            "score": arena_score(compiled, correct, speedup if timed else None), "elapsed_s": 1.0, "phases_s": {},
            "outcome": decide(compiled=compiled, correct=stages[1]["passed"], performance=stages[2]["passed"],
                              configs=configs, checks=checks, fault=fault),
            "checks": checks, "compiled": compiled, "correct": bool(compiled and correct)}


def fake_result(grade: dict, *, tokens: tuple[int, int] | None = None, cost_usd: float | None = None,
                model: str = "claude-sonnet-4-5", policy_error: str | None = None) -> dict[str, Any]:
    """A rollout result (`kernelgym.rollout.rollout`'s dict) around `grade`; `tokens` (input, output) makes the
    usage a model policy's, with `cost_usd` its cost (None: unpriced)."""
    usage = ([StepUsage(input_tokens=tokens[0], output_tokens=tokens[1], cost_usd=cost_usd, api_calls=1,
                        model=model)] if tokens else [])
    return {"reward": grade["score"], "terminated": True, "truncated": False, "steps": 3, "wall_s": 5.0,
            "grade": grade, "unseen": None, "policy_error": policy_error, "usage": episode_totals(usage, 1.0),
            "outcome": episode_outcome(grade, policy_error)}


def make_run_dir(parent: Path, task: str, policy: str, results: list[dict], *, seed: int = 0,
                 name: str | None = None, hardware: str | None = None) -> Path:
    """A run directory under `parent` holding `results` (one per episode, seeds `seed`, `seed` + 1, ...)."""
    run_dir = parent / (name or f"20261203-120000-{task}-{policy}")
    run_dir.mkdir(parents=True)
    settings = {"task": task, "policy": policy, "policy_config": None, "seed": seed, "max_steps": 50,
                "max_wall_s": 3600.0, "hardware": hardware, "warmup": 10, "reps": 100, "rounds": 10,
                "command_timeout_s": 300.0, "no_sandbox": False, "tasks_dir": None, "policies_dir": None,
                "hardware_dir": None, "episodes": len(results)}
    (run_dir / "run.json").write_text(json.dumps(settings, indent=1))
    # Each row carries its seed, as kernelgym.rollout.write_results writes them (unless the caller gave one).
    results = [{"seed": seed + k, **r} for k, r in enumerate(results)]
    (run_dir / "results.json").write_text(json.dumps(results, indent=1))
    lines = []
    for k, r in enumerate(results):
        episode_id = f"20261203-120000-{k:08x}"
        ep = run_dir / "episodes" / episode_id
        ep.mkdir(parents=True)
        (ep / "episode.json").write_text(json.dumps({"task": task, "task_dir": f"/tasks/{task}",
                                                     "env_id": f"KernelArena/{task}-v0", "hardware": hardware,
                                                     "episode_id": episode_id, "seed": seed + k, "format": "task"}))
        (ep / "grade.json").write_text(json.dumps(r["grade"]))
        base = {"format": TRAJECTORY_FORMAT, "episode_id": episode_id, "time": 0.0}
        lines.append({**base, "t": 0, "event": "reset", "observation": {"output": "", "prompt": "p"}, "info": {}})
        lines.append({**base, "t": 1, "event": "step", "action": {"kind": "submit"},
                      "observation": {"output": "graded", "prompt": ""}, "reward": r["reward"], "terminated": True,
                      "truncated": False, "info": {"grade": r["grade"]}})
    (run_dir / "trajectories.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run_dir
