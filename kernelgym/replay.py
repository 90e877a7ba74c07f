"""Re-run a recorded episode's actions in a fresh env and check that its grade comes back: ``kernelgym replay``.

The env is made as the run made it (its run.json: task, step and time budgets, timing settings; the recorded
hardware profile) and reset with the episode's seed (its ``episode.json``), then given the recorded actions in order.
A recording is data, never trusted as code or settings of this machine: its actions run in the sandbox whatever its
run.json says (``no_sandbox`` is noted, not followed: `--no-sandbox` is the caller's to give), its task is loaded
only from the task folders searched here (a task's reference runs in this process, unsandboxed: a folder the
recording names elsewhere, or its ``tasks_dir``, is refused unless the caller gives that folder as `tasks_dir`), and
its episode id names a folder only where it is a plain name (no ``/`` or ``..``). The replay is itself recorded
(``trajectories.jsonl`` and ``replay.json`` in a run directory of its own). `compare_grades` decides whether the grade
came back:

- everywhere: the same steps, the same actions refused (``action_error``), the same ending (terminated or
  truncated), compiled and correct, and each config's correct verdict;
- untimed grades (the CPU interpreter): the score and the outcome identical;
- timed grades (a GPU): each config's noise band (the per-round speedups' [min, max]) overlaps the recorded one:
  two gradings of one kernel are two samples, and each band says where its own rounds fell, so one grading's mean
  may lie outside the other's band while the two agree; the mean speedup likewise, its band the mean of the
  configs' bands.
  Outcomes may differ between ``faster``, ``no_gain`` and ``slower`` (that is the noise band's call); the score,
  which follows the speedup, is shown but not compared.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelgym.errors import KernelGymError
from kernelgym.offline import RecordedEpisode, read_episodes

#: Relative speedup tolerance where a timed grade recorded no noise band (older runs).
NO_BAND_TOLERANCE = 0.02
#: Outcomes of a correct, timed kernel: which one a grade gets is decided by the noise band.
_TIMED_OUTCOMES = frozenset({"faster", "no_gain", "slower"})
#: The file written in the replay's run directory.
REPLAY_RECORD = "replay.json"
#: An episode id usable as a folder name (`KernelArenaEnv` makes ``<time>-<hex>``): the replay's run directory and
#: ``episodes/<id>/episode.json`` are named from it, so a recording's ``../`` or ``/`` must not reach them.
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def plain_episode_id(episode_id: Any) -> str | None:
    """`episode_id` where it is a plain folder name (letters, digits, ``.``, ``_``, ``-``; not starting with ``.``),
    else None."""
    return episode_id if isinstance(episode_id, str) and _PLAIN_ID.fullmatch(episode_id) else None


@dataclass
class Check:
    """One comparison of the recorded grade with the replayed one; `ok` None: shown, not compared."""

    name: str
    recorded: Any
    replayed: Any
    ok: bool | None
    note: str = ""


@dataclass
class ReplayResult:
    """What `replay_episode` found: `matched` when no check failed."""

    episode_id: str | None
    source: Path
    checks: list[Check]
    recorded_grade: dict
    replayed_grade: dict
    replay_dir: Path
    notes: list[str] = field(default_factory=list)
    """What the replay could not take from the recording (a seed), or had to add (a final submit)."""

    @property
    def matched(self) -> bool:
        return all(c.ok is not False for c in self.checks)


def select_episode(trajectory: str | Path, episode: int = 1) -> RecordedEpisode:
    """Whole episode number `episode` (1 = the first) of a trajectory file or run directory.

    Raises:
        KernelGymError: the file is missing or no trajectory (`read_episodes`), it has no such whole episode, or
            the episode ended without a grade.
    """
    report = read_episodes([trajectory])
    n = len(report.episodes)
    if not 1 <= episode <= n:
        left_out = f" ({report.unfinished} unfinished, {report.failed} failed left out)" if (
            report.unfinished or report.failed) else ""
        raise KernelGymError(f"{trajectory}: no episode {episode}; it holds {n} whole episode{'' if n == 1 else 's'}"
                             f"{left_out}: give --episode 1..{n}" if n else
                             f"{trajectory}: no whole episode to replay{left_out}")
    chosen = report.episodes[episode - 1]
    if not chosen.infos[-1].get("grade"):
        raise KernelGymError(f"{trajectory}: episode {episode} ended without a grade; there is nothing to compare")
    return chosen


def _run_files(episode: RecordedEpisode) -> tuple[dict, dict]:
    """The run's settings (run.json) and the episode's record (episodes/<id>/episode.json) beside its trajectory
    file; empty where it was recorded outside `kernelgym run`."""
    def load(path: Path) -> dict:
        try:
            value = json.loads(path.read_text())
        except (OSError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}
    root, episode_id = episode.source.parent, plain_episode_id(episode.episode_id)
    return load(root / "run.json"), load(root / "episodes" / episode_id / "episode.json") if episode_id else {}


def _trusted_task(task: Any, recorded_tasks_dir: Any, tasks_dir: str | Path | None) -> None:
    """Refuse a task whose code the recording, not the caller, would choose: a task folder outside the folders
    searched here (the built-in root, $KERNELGYM_TASKS_PATH, `tasks_dir`), or a recorded ``tasks_dir`` the caller
    did not give. A task's reference and input builder run in this process, outside the sandbox.

    Raises:
        KernelGymError: saying which folder, and how to trust it.
    """
    from kernelgym.discovery import task_search_path

    def same(a: Any, b: Any) -> bool:
        return b is not None and Path(str(a)).resolve() == Path(b).resolve()

    if recorded_tasks_dir and not same(recorded_tasks_dir, tasks_dir):
        raise KernelGymError(f"the recording's run.json names tasks_dir {str(recorded_tasks_dir)!r}: its tasks' code "
                             f"runs in this process, unsandboxed; give --tasks-dir {recorded_tasks_dir} to trust it")
    text = str(task)
    if os.sep in text and not text.startswith("KernelArena/"):  # a folder, as get_task reads it
        folder = Path(text).resolve()
        if not any(folder.is_relative_to(root.resolve()) for root in task_search_path(tasks_dir)):
            raise KernelGymError(f"the recording names task folder {text!r}, outside the task folders searched here: "
                                 f"its code runs in this process, unsandboxed; give --tasks-dir with a folder above it "
                                 f"to trust it")


def make_replay_env(episode: RecordedEpisode, run_dir: Path, sandbox: str | None = None,
                    tasks_dir: str | Path | None = None):
    """A fresh env as the episode's run made it, recording to ``run_dir/trajectories.jsonl``; and the seed.

    Args:
        sandbox: ``bwrap`` or ``none``; None: ``bwrap`` (a recording's ``no_sandbox`` is noted, never followed).
        tasks_dir: a task folder the caller trusts (the recording's ``tasks_dir`` must be this one).

    Returns:
        (env wrapped in a TrajectoryRecorder, seed or None, notes on what the recording lacked).

    Raises:
        KernelGymError: the episode names no task, or a task folder the caller did not trust (`_trusted_task`).
    """
    from kernelgym.env import KernelArenaEnv
    from kernelgym.grader import GraderConfig
    from kernelgym.hardware import detect_profile, hardware_search_path
    from kernelgym.wrappers import TrajectoryRecorder

    settings, record = _run_files(episode)
    reset_info, notes = episode.infos[0], []
    task = settings.get("task") or record.get("task_dir") or reset_info.get("task")
    if not task:
        raise KernelGymError(f"{episode.source}: the episode names no task (its reset info has no 'task')")
    _trusted_task(task, settings.get("tasks_dir"), tasks_dir)
    if plain_episode_id(episode.episode_id) is None:
        notes.append(f"the episode id {str(episode.episode_id)!r:.80} is no plain folder name: its episode.json "
                     "was not read")
    seed = record.get("seed")
    if seed is None:
        notes.append("no seed recorded (episode.json): reset without one")
    if sandbox is None:
        sandbox = "bwrap"
        if settings.get("no_sandbox"):
            notes.append("recorded without the sandbox (run.json no_sandbox): replayed in it all the same (a "
                         "recording never turns the sandbox off; --no-sandbox does, for a trusted one)")
    defaults = GraderConfig()
    grader = GraderConfig(warmup=settings.get("warmup", defaults.warmup), reps=settings.get("reps", defaults.reps),
                          rounds=settings.get("rounds", defaults.rounds), sandbox=sandbox)
    budgets = {k: settings[k] for k in ("max_steps", "max_wall_s", "command_timeout_s") if settings.get(k)}
    if "max_steps" not in budgets:
        # Without run.json the budget is unknown: room for every recorded action and the final submit.
        budgets["max_steps"] = len(episode.actions) + 1
    roots = hardware_search_path(settings["hardware_dir"]) if settings.get("hardware_dir") else None
    # The recorded profile, not this machine's: a grade from another GPU is not expected to come back.
    hardware = detect_profile(reset_info.get("hardware") or settings.get("hardware"), root=roots)
    env = KernelArenaEnv(task, run_dir=run_dir, hardware=hardware,
                         sandbox=sandbox, grader=grader, tasks_dir=tasks_dir, spawn_ahead=False, **budgets)
    return TrajectoryRecorder(env, run_dir / "trajectories.jsonl"), seed, notes


def replay_episode(trajectory: str | Path, episode: int = 1, *, run_dir: str | Path = "kernelgym-runs/replays",
                   sandbox: str | None = None, tasks_dir: str | Path | None = None) -> ReplayResult:
    """Replay whole episode `episode` (1 = the first) of `trajectory` and compare the grades (module docstring).

    Args:
        trajectory: a trajectory JSONL file, or a run directory holding ``trajectories.jsonl``.
        episode: which whole episode of the file, from 1.
        run_dir: the parent of the replay's own run directory (``<time>-replay-<episode id>``; ``episode<n>``
            for an id that is no plain folder name).
        sandbox: ``bwrap`` or ``none``; None: ``bwrap``, whatever the recording says.
        tasks_dir: a task folder the caller trusts (see the module docstring).

    Raises:
        KernelGymError: bad input (`select_episode`), or the env cannot be made (task or hardware unknown here, or
            a task folder not trusted).
    """
    recorded = select_episode(trajectory, episode)
    name = plain_episode_id(recorded.episode_id) or f"episode{episode}"
    replay_dir = Path(run_dir) / f"{time.strftime('%Y%m%d-%H%M%S')}-replay-{name}"
    replay_dir.mkdir(parents=True, exist_ok=True)
    env, seed, notes = make_replay_env(recorded, replay_dir, sandbox, tasks_dir)
    errors, ended, info = [], (False, False), {}
    try:
        env.reset(seed=seed)
        for action in recorded.actions:
            _, _, terminated, truncated, info = env.step(action)
            errors.append(info.get("action_error") or "")
            ended = (bool(terminated), bool(truncated))
            if terminated or truncated:
                break
        if not any(ended):
            # The recording was cut by a budget the replay does not spend alike (its wall clock, or a step budget no
            # run.json recorded): grade it as the env would have, truncated.
            notes.append("the replay had not ended after the recorded actions (the recording ended on its time "
                         "budget, or on a step budget not recorded): it was ended with a truncating submit")
            _, _, terminated, truncated, info = env.step({"kind": "submit", "truncate": True})
            ended = (bool(terminated), bool(truncated))
    finally:
        env.close()
    recorded_errors = [i.get("action_error") or "" for i in recorded.infos[1:]]
    checks = [Check("steps", len(recorded.actions), len(errors), len(errors) == len(recorded.actions)),
              Check("refused actions", _refused(recorded_errors), _refused(errors), recorded_errors == errors),
              Check("ending", _ending(recorded.terminations[-1], recorded.truncations[-1]), _ending(*ended),
                    (recorded.terminations[-1], recorded.truncations[-1]) == ended)]
    replayed_grade = info.get("grade") or {}
    checks += compare_grades(recorded.infos[-1]["grade"], replayed_grade)
    result = ReplayResult(recorded.episode_id, recorded.source, checks, recorded.infos[-1]["grade"], replayed_grade,
                          replay_dir, notes)
    (replay_dir / REPLAY_RECORD).write_text(json.dumps(
        {"source": str(recorded.source), "episode": episode, "episode_id": recorded.episode_id,
         "matched": result.matched, "notes": notes, "checks": [asdict(c) for c in checks]}, indent=1, default=str))
    return result


def _refused(errors: list[str]) -> str:
    steps = [str(t) for t, e in enumerate(errors, 1) if e]
    return f"steps {', '.join(steps)}" if steps else "none"


def _ending(terminated: bool, truncated: bool) -> str:
    return "terminated" if terminated else "truncated" if truncated else "not ended"


def _key(config: Any) -> str:
    return json.dumps(config, sort_keys=True, default=str)


def _timed(grade: dict) -> bool:
    return not grade.get("interpreter") and any(c.get("speedup") is not None for c in grade.get("configs", []))


def _within(recorded: float, recorded_band: list | None, replayed: float, replayed_band: list | None) -> bool:
    """Whether a replayed speedup agrees with the recorded one: their noise bands overlap; where one grade has no
    band, its speedup lies in the other's band; where neither has one (older runs), within `NO_BAND_TOLERANCE`."""
    if not recorded_band and not replayed_band:
        return abs(replayed - recorded) <= NO_BAND_TOLERANCE * abs(recorded)
    low, high = (recorded_band or [recorded, recorded]), (replayed_band or [replayed, replayed])
    return low[0] <= high[1] and high[0] <= low[1]


def _band_text(band: list | None) -> str:
    return "none" if not band else f"[{band[0]:.4f}, {band[1]:.4f}]"


def _mean_band(grade: dict) -> list[float] | None:
    bands = [c["noise_band"] for c in grade.get("configs", []) if c.get("noise_band")]
    if not bands:
        return None
    return [sum(b[0] for b in bands) / len(bands), sum(b[1] for b in bands) / len(bands)]


def compare_grades(recorded: dict, replayed: dict) -> list[Check]:
    """The checks of a replayed grade against the recorded one (the module docstring says which)."""
    timed = _timed(recorded) or _timed(replayed)
    checks = [Check(name, recorded.get(name), replayed.get(name), recorded.get(name) == replayed.get(name))
              for name in ("compiled", "correct")]
    same_outcome = recorded.get("outcome") == replayed.get("outcome")
    noisy = timed and {recorded.get("outcome"), replayed.get("outcome")} <= _TIMED_OUTCOMES
    checks.append(Check("outcome", recorded.get("outcome"), replayed.get("outcome"), same_outcome or noisy,
                        "within the noise band's call" if noisy and not same_outcome else ""))
    if timed:
        checks.append(Check("score", recorded.get("score"), replayed.get("score"), None,
                            "timed: follows the speedup, compared per config"))
        r, p = recorded.get("speedup"), replayed.get("speedup")
        ok = r is not None and p is not None and _within(r, _mean_band(recorded), p, _mean_band(replayed))
        checks.append(Check("speedup (mean)", r, p, ok or (r is None and p is None), "the mean noise bands overlap"))
    else:
        checks.append(Check("score", recorded.get("score"), replayed.get("score"),
                            recorded.get("score") == replayed.get("score")))
    rows = {_key(c.get("config")): c for c in replayed.get("configs", [])}
    for row in recorded.get("configs", []):
        other = rows.pop(_key(row.get("config")), None)
        name = f"config {_key(row.get('config'))}"
        if other is None:
            checks.append(Check(name, "correct" if row.get("correct") else "wrong", "missing", False))
            continue
        checks.append(Check(name, "correct" if row.get("correct") else "wrong",
                            "correct" if other.get("correct") else "wrong", row.get("correct") == other.get("correct")))
        if timed and (row.get("speedup") is not None or other.get("speedup") is not None):
            r, p = row.get("speedup"), other.get("speedup")
            ok = r is not None and p is not None and _within(r, row.get("noise_band"), p, other.get("noise_band"))
            checks.append(Check(f"{name} speedup", r, p, ok, f"bands {_band_text(row.get('noise_band'))} and "
                                                                f"{_band_text(other.get('noise_band'))} overlap"
                                                                f"{'' if ok else ': no'}"))
    for key in rows:
        checks.append(Check(f"config {key}", "missing", "present", False))
    return checks
