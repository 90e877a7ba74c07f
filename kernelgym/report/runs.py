"""Run directories of `kernelgym run` read back as one row per episode (`EpisodeRow`), for reports and comparisons.

A run directory holds ``run.json`` (the run's settings: task, policy, first seed, ...) and ``results.json`` (one
rollout result per finished episode, in order: reward, grade, usage, outcome, ...); ``kernelgym unseen`` adds
``unseen_summary.json``. Episode k of a run has seed ``run.json["seed"] + k`` unless its result names its own
``seed`` (as it may name its own ``task`` and ``policy``).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

from kernelgym.grader.outcome import POLICY_ERROR, decide

RUN_SETTINGS = "run.json"
RESULTS = "results.json"
UNSEEN_SUMMARY = "unseen_summary.json"
UNKNOWN = "unknown"
"""The outcome of an episode from before outcomes were recorded whose grade does not hold the gates' results."""


@dataclass
class EpisodeRow:
    """One finished episode of a run, flattened for tables and statistics."""

    run_dir: str
    task: str
    """The task's name (``triton-rmsnorm``), from the grade's env id where there is one."""
    policy: str
    seed: int | None
    episode: int
    """1-based position of the episode in its run."""
    hardware: str | None
    interpreter: bool
    """Graded on the CPU interpreter: nothing was timed, `speedup` is None."""
    compiled: bool | None
    correct: bool | None
    score: float
    """The arena score (0, 20, 120, or 120 + 100 x speedup)."""
    speedup: float | None
    """Mean over the configs of baseline time / candidate time; None where not measured."""
    speedup_geomean: float | None
    outcome: str
    """The episode's outcome (`kernelgym.grader.outcome.OUTCOMES`, or ``unknown``)."""
    grade_outcome: str
    """The grade's own outcome (differs from `outcome` for a policy error)."""
    steps: int | None
    wall_s: float | None
    tokens: int | None
    """Every token the policy used (input, output, cache reads and writes); None where it reports none."""
    cost_usd: float | None
    """None where the policy reports no usage or its model has no price."""

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-able dict (a row of report.json's ``episodes``, or of ``unseen``)."""
        return asdict(self)


@dataclass
class UnseenRow:
    """The `kernelgym unseen` summary of one run (``unseen_summary.json``)."""

    run_dir: str
    task: str
    policy: str
    seed: int | None
    """Which set of private unseen configs was replayed."""
    episodes: int
    quadrants: dict[str, int]
    conditional_correctness: float | None
    partially_covered: int

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-able dict (a row of report.json's ``episodes``, or of ``unseen``)."""
        return asdict(self)


@dataclass
class RunSet:
    """What `read_runs` found: the run directories read, their episodes and unseen summaries, and what was
    skipped (one line each, with the reason)."""

    run_dirs: list[Path]
    episodes: list[EpisodeRow]
    unseen: list[UnseenRow]
    skipped: list[str]


def task_name(text: Any) -> str:
    """A task's name from an env id (``KernelArena/triton-rmsnorm-v0`` -> ``triton-rmsnorm``), a task folder (its
    folder name) or a name (itself)."""
    s = str(text)
    if s.startswith("KernelArena/"):
        return re.sub(r"-v\d+$", "", s.removeprefix("KernelArena/"))
    return Path(s).name if "/" in s else s


def grade_outcome(grade: dict) -> str:
    """A grade's outcome: its own where recorded; else decided (`kernelgym.grader.outcome.decide`) from its stages,
    configs and checks (a grade from before outcomes; an infrastructure fault then reads as the gate it failed);
    else ``unknown``."""
    if grade.get("outcome"):
        return str(grade["outcome"])
    stages = grade.get("stages")
    if not (isinstance(stages, list) and len(stages) >= 3 and all(isinstance(s, dict) for s in stages)):
        return UNKNOWN
    configs, checks = grade.get("configs") or [], grade.get("checks") or {}
    bands_ok = isinstance(configs, list) and all(
        isinstance(c, dict) and (not c.get("noise_band") or isinstance(c["noise_band"], list)
                                 and len(c["noise_band"]) == 2
                                 and all(isinstance(x, (int, float)) for x in c["noise_band"])) for c in configs)
    if not (bands_ok and isinstance(checks, dict)):  # a grade of another shape: nothing to decide from
        return UNKNOWN
    return decide(compiled=stages[0].get("passed"), correct=stages[1].get("passed"),
                  performance=stages[2].get("passed"), configs=configs, checks=checks, fault=None)


def _tokens(usage: dict) -> int | None:
    """Every token of `usage` (None where it reports none).

    Raises:
        ValueError: a count is not a whole number (results.json was edited or corrupted)."""
    if usage.get("input_tokens") is None:
        return None
    counts = [usage.get(k) or 0 for k in ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens")]
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in counts):
        raise ValueError(f"usage token counts must be whole numbers, got {counts!r:.200}")
    return sum(counts)


def _number(x: Any, what: str = "a number") -> float | None:
    """`x` as a float; None where it is missing (None) or not a number.

    Raises:
        ValueError: `x` is NaN or infinite (Python's json reads NaN and Infinity): a chart or a mean of it says
            nothing, and would break the page's axes."""
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return None
    if not math.isfinite(x):
        raise ValueError(f"{what} is {x}, not a finite number")
    return float(x)


def episode_row(run_dir: Path, settings: dict, k: int, result: dict) -> EpisodeRow:
    """The row of `result`, the k-th (0-based) entry of `run_dir`'s results.json, with `settings` its run.json."""
    grade = result.get("grade") if isinstance(result.get("grade"), dict) else {}
    usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
    graded = grade_outcome(grade) if grade else UNKNOWN
    if result.get("outcome"):
        outcome = str(result["outcome"])
    else:  # a result from before outcomes: the rollout's rule (episode_outcome) where the grade says enough
        outcome = POLICY_ERROR if result.get("policy_error") else graded
    first_seed = settings.get("seed")
    seed = result.get("seed", first_seed + k if isinstance(first_seed, int) else None)
    if not (seed is None or isinstance(seed, int) and not isinstance(seed, bool)):
        # Episodes pair by (task, seed): a seed of another type would pair with nothing, or not hash.
        raise ValueError(f"episode {k + 1}: seed {seed!r:.80} is not a whole number")
    score = _number(grade.get("score"), f"episode {k + 1}: the grade's score")
    return EpisodeRow(
        run_dir=str(run_dir), task=task_name(result.get("task") or grade.get("task") or settings.get("task", "?")),
        policy=str(result.get("policy") or settings.get("policy", "?")), seed=seed, episode=k + 1,
        hardware=grade.get("hardware") or settings.get("hardware"), interpreter=bool(grade.get("interpreter")),
        compiled=grade.get("compiled"), correct=grade.get("correct"),
        score=score if score is not None else _number(result.get("reward"), f"episode {k + 1}: reward") or 0.0,
        speedup=_number(grade.get("speedup"), f"episode {k + 1}: the grade's speedup"),
        speedup_geomean=_number(grade.get("speedup_geomean"), f"episode {k + 1}: the grade's speedup_geomean"),
        outcome=outcome, grade_outcome=graded, steps=result.get("steps"),
        wall_s=_number(result.get("wall_s"), f"episode {k + 1}: wall_s"),
        tokens=_tokens(usage), cost_usd=_number(usage.get("cost_usd"), f"episode {k + 1}: cost_usd"))


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def is_run_dir(path: Path) -> bool:
    """Whether `path` is a run directory of `kernelgym run` (it holds run.json or results.json)."""
    return path.is_dir() and ((path / RUN_SETTINGS).is_file() or (path / RESULTS).is_file())


def find_run_dirs(paths: Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """The run directories among `paths`, in order: each path that is one, and for a folder that holds run
    directories (the ``--run-dir`` parent of a run of several tasks or policies), those in it, by name. Returns
    (run directories, one line per path skipped and why)."""
    found: list[Path] = []
    skipped: list[str] = []
    for path in map(Path, paths):
        if is_run_dir(path):
            children = [path]
        elif path.is_dir():
            children = sorted(p for p in path.iterdir() if is_run_dir(p))
            if not children:
                skipped.append(f"{path}: not a run directory of `kernelgym run` (no {RUN_SETTINGS} or {RESULTS}), "
                               f"nor a folder of them")
        else:
            children = []
            skipped.append(f"{path}: not a run directory of `kernelgym run` ("
                           + ("a file" if path.exists() else "no such directory") + ")")
        found += [p for p in children if p not in found]
    return found, skipped


def read_run(run_dir: Path) -> tuple[list[EpisodeRow], UnseenRow | None]:
    """The episodes of one run directory and its unseen summary (None where `kernelgym unseen` was not run).

    Raises:
        ValueError: results.json is missing, unreadable or not a list (the run ended no episode yet), an episode's
            seed is not a whole number or one of its numbers is not finite, or run.json is unreadable.
    """
    try:
        results = _read_json(run_dir / RESULTS)
    except (OSError, ValueError) as e:
        raise ValueError(f"no readable {RESULTS} (no episode finished yet?): {e}") from None
    if not isinstance(results, list):
        raise ValueError(f"{RESULTS} is not a list of episode results")
    try:
        settings = _read_json(run_dir / RUN_SETTINGS) if (run_dir / RUN_SETTINGS).is_file() else {}
    except (OSError, ValueError) as e:
        raise ValueError(f"unreadable {RUN_SETTINGS}: {e}") from None
    settings = settings if isinstance(settings, dict) else {}
    rows = [episode_row(run_dir, settings, k, r) for k, r in enumerate(results) if isinstance(r, dict)]
    unseen = None
    if (run_dir / UNSEEN_SUMMARY).is_file():
        try:
            s = _read_json(run_dir / UNSEEN_SUMMARY)
            unseen = UnseenRow(str(run_dir), rows[0].task if rows else task_name(settings.get("task", "?")),
                               rows[0].policy if rows else str(settings.get("policy", "?")), s.get("seed"),
                               int(s.get("episodes", 0)), {str(q): int(n) for q, n in s["quadrants"].items()},
                               _number(s.get("conditional_correctness")), int(s.get("partially_covered", 0)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError) as e:
            raise ValueError(f"unreadable {UNSEEN_SUMMARY}: {e}") from None
    return rows, unseen


def read_runs(paths: Iterable[str | Path]) -> RunSet:
    """Every episode of the run directories among `paths` (see `find_run_dirs`); a path that is not a run
    directory, or one whose files cannot be read, is skipped with its reason in `RunSet.skipped`, never an error."""
    run_dirs, skipped = find_run_dirs(paths)
    read, episodes, unseen = [], [], []
    for run_dir in run_dirs:
        try:
            rows, summary = read_run(run_dir)
        except ValueError as e:
            skipped.append(f"{run_dir}: {e}")
            continue
        if not rows:
            skipped.append(f"{run_dir}: no finished episode in {RESULTS}")
            continue
        read.append(run_dir)
        episodes += rows
        unseen += [summary] if summary else []
    return RunSet(read, episodes, unseen, skipped)
