"""Offline-RL datasets from recorded episodes: the JSONL trajectories of `kernelgym.wrappers.TrajectoryRecorder`
(``trajectories.jsonl`` in every `kernelgym run` directory) read back as whole episodes, and written as a
[Minari](https://minari.farama.org) dataset (``pip install 'kernelgym[data]'``).

In the dataset, observations and actions are in the env's own spaces (`kernelgym.spaces`): an observation is
``{"output", "prompt"}`` text, an action ``{"kind": index into ACTION_KINDS, "cmd", "path", "content", "old",
"new", "config"}``. Text is kept as it was sent, so a field may hold characters outside the Text space's charset.
The reward is the env's: 0 on every step but the last, the arena score on the last. ``infos["json"][t]`` holds
the env's info after observation t as JSON (on the last step, the grade), with the policy's report on the step
that led to it (its token use and cost) under ``"policy"``; ``infos["action_json"][t]`` holds the action of the
step that led to observation t as it was sent ("" for the reset). A malformed action keeps the episode going in
the env (an error observation); in the dataset its `kind` is the one it named where that is a known kind, else
``shell``, with the fields it could not give left empty, and its info's ``action_error`` says what was wrong.
"""
from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from kernelgym.errors import KernelGymError
from kernelgym.spaces import ACTION_KINDS, ActionError, action_space, observation_space, parse_action
from kernelgym.wrappers.trajectory import TRAJECTORY_FORMAT

_TEXT_FIELDS = ("cmd", "path", "content", "old", "new")


@dataclass
class RecordedEpisode:
    """One whole episode read from trajectory files: ``len(observations) == len(actions) + 1``."""

    episode_id: str | None
    source: Path
    observations: list[dict] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    """Each step's action as it was sent (a dict, a JSON string, ...)."""
    rewards: list[float] = field(default_factory=list)
    terminations: list[bool] = field(default_factory=list)
    truncations: list[bool] = field(default_factory=list)
    infos: list[dict] = field(default_factory=list)
    """The reset's info, then each step's info, with the policy's report under ``"policy"`` where there was one."""

    @property
    def ended(self) -> bool:
        return bool(self.terminations and (self.terminations[-1] or self.truncations[-1]))


@dataclass
class ReadReport:
    """What `read_episodes` found: the whole episodes, and how many it left out, and why."""

    episodes: list[RecordedEpisode]
    unfinished: int = 0
    """Episodes whose file ends before they did (the run was killed; `kernelgym run --resume` runs them again)."""
    failed: int = 0
    """Episodes in which the env raised out of step() (an ``error`` record)."""


def _record_problem(record: dict) -> str | None:
    """What is wrong with a reset or step record's fields (the TrajectoryRecorder writes an observation dict, an
    info dict, a finite reward, a policy report dict, a grade dict), or None."""
    if not isinstance(record.get("observation"), dict):
        return "its observation is not an object"
    info = record.get("info")
    if info is not None and not isinstance(info, dict):
        return "its info is not an object"
    if info and info.get("grade") is not None and not isinstance(info["grade"], dict):
        return "its grade is not an object"
    if record.get("policy") is not None and not isinstance(record["policy"], dict):
        return "its policy report is not an object"
    reward = record.get("reward")
    if reward is not None and not (isinstance(reward, (int, float)) and not isinstance(reward, bool)
                                   and math.isfinite(reward)):
        return f"its reward {reward!r:.40} is not a finite number"
    return None


def read_episodes(paths: Iterable[str | Path]) -> ReadReport:
    """The whole episodes in trajectory files (``kernelgym.trajectory/1``), in file order.

    Args:
        paths: trajectory JSONL files, or run directories holding ``trajectories.jsonl``.

    Raises:
        KernelGymError: a file is missing or unreadable, a line is not JSON (or nested too deep to read), or a
            record has another format or fields of the wrong type (`_record_problem`).
    """
    report = ReadReport([])
    for path in paths:
        path = Path(path)
        if path.is_dir():
            path = path / "trajectories.jsonl"
        if path.exists() and not path.is_file():  # a FIFO would block the read forever
            raise KernelGymError(f"{path}: not a regular file")
        try:
            lines = path.read_text().splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise KernelGymError(f"{path}: cannot read trajectories ({e})") from None
        current: RecordedEpisode | None = None
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError) as e:  # RecursionError: arrays or objects nested thousands deep
                raise KernelGymError(f"{path}:{n}: not a JSON line ({e})") from None
            if not isinstance(record, dict) or record.get("format") != TRAJECTORY_FORMAT:
                raise KernelGymError(f"{path}:{n}: not a {TRAJECTORY_FORMAT} record (kernelgym.wrappers."
                                     f"TrajectoryRecorder writes them)")
            event = record.get("event")
            problem = _record_problem(record) if event in ("reset", "step") else None
            if problem:
                raise KernelGymError(f"{path}:{n}: a {event} record, but {problem}")
            if event == "reset":
                if current is not None:
                    report.unfinished += 1
                current = RecordedEpisode(record.get("episode_id"), path, [record["observation"]],
                                          infos=[record.get("info") or {}])
            elif current is None:  # a step with no reset before it in this file
                continue
            elif event == "error":
                report.failed += 1
                current = None
            elif event == "step":
                current.observations.append(record["observation"])
                current.actions.append(record.get("action"))
                current.rewards.append(float(record.get("reward") or 0.0))
                current.terminations.append(bool(record.get("terminated")))
                current.truncations.append(bool(record.get("truncated")))
                info = dict(record.get("info") or {})
                if "policy" in record:
                    info["policy"] = record["policy"]
                current.infos.append(info)
                if current.ended:
                    report.episodes.append(current)
                    current = None
        if current is not None:
            report.unfinished += 1
    return report


#: Bytes of a file's first line read to tell a trajectory file from another file (a PNG has no early newline).
_FIRST_LINE_BYTES = 1 << 20


def trajectory_sources(paths: Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """The trajectory files among `paths`, as a shell glob gives them (``kernelgym export kernelgym-runs/*`` also
    matches folders and files that are no run: a training example's output folder, a learning-curve PNG), and one
    line per path left out, saying why.

    A run directory stands for its ``trajectories.jsonl``; a file is kept when its first line is a
    `TRAJECTORY_FORMAT` record (an empty file is kept: a run killed before its first reset). A kept file may still
    be broken further on: `read_episodes` raises for that.

    Raises:
        KernelGymError: a path does not exist (a typo is not skipped quietly).
    """
    kept: list[Path] = []
    skipped: list[str] = []
    for path in map(Path, paths):
        if not path.exists():
            raise KernelGymError(f"{path}: no such file or directory (expected a run directory of `kernelgym run`, "
                                 f"or a trajectories.jsonl file)")
        if path.is_dir():
            if (path / "trajectories.jsonl").is_file():
                kept.append(path / "trajectories.jsonl")
                continue
            runs = sorted(p.parent.name for p in path.glob("*/trajectories.jsonl"))
            hint = f"; it holds runs: give {path}/* instead" if runs else ""
            skipped.append(f"{path}: not a run directory (no trajectories.jsonl){hint}")
            continue
        if not path.is_file():  # a FIFO a glob matched would block the read forever
            skipped.append(f"{path}: not a regular file")
            continue
        try:
            with path.open("rb") as f:
                first = next((line for line in iter(lambda: f.readline(_FIRST_LINE_BYTES), b"") if line.strip()),
                             b"")
            record = json.loads(first.decode()) if first.strip() else None
        except (OSError, UnicodeDecodeError, ValueError):
            record = {}
        if record is None or (isinstance(record, dict) and record.get("format") == TRAJECTORY_FORMAT):
            kept.append(path)
        else:
            skipped.append(f"{path}: not a trajectory file (its first line is no {TRAJECTORY_FORMAT} record)")
    return kept, skipped


def space_action(action: Any) -> dict:
    """`action` as sent to the env, in the action space's form (`kernelgym.spaces.action_space`): parsed where it
    is well formed; else its `kind` where that is a known kind (else ``shell``) with its fields empty."""
    try:
        a = parse_action(action)
        kind, fields, config = a.kind, {f: getattr(a, f) for f in _TEXT_FIELDS}, a.config
    except ActionError:
        named = action.get("kind") if isinstance(action, dict) else None
        kind = named if isinstance(named, str) and named in ACTION_KINDS else "shell"
        fields, config = {f: "" for f in _TEXT_FIELDS}, 0
    return {"kind": ACTION_KINDS.index(kind), **fields, "config": config}


def to_minari(paths: Iterable[str | Path], dataset_id: str, *, data_format: str = "arrow", env_id: str | None = None,
              algorithm_name: str | None = None, author: str | None = None, description: str | None = None):
    """Write the whole episodes of trajectory files as the Minari dataset `dataset_id` (under
    ``$MINARI_DATASETS_PATH``, default ``~/.minari/datasets``); returns it as a ``minari.MinariDataset`` and the
    `ReadReport` of what was left out.

    Args:
        paths: trajectory JSONL files, or run directories holding ``trajectories.jsonl``.
        dataset_id: Minari's ``(namespace/)(env_name/)dataset_name-v(version)``, e.g. ``kernelgym/rmsnorm/tuner-v0``.
        data_format: ``arrow`` (pyarrow) or ``hdf5`` (h5py), Minari's storages.
        env_id: the env the episodes came from, recorded in the dataset's metadata (``KernelArena/...-v0``).
        algorithm_name: the policy, for the metadata.
        author, description: for the metadata.

    Raises:
        KernelGymError: Minari is not installed, no whole episode was found, or Minari refused the dataset (an id
            already taken, say).
    """
    try:
        import minari
        from minari.data_collector import EpisodeBuffer
    except ImportError as e:
        raise KernelGymError(f"Minari datasets need the data extra ({e}): pip install 'kernelgym[data]'") from None
    report = read_episodes(paths)
    if not report.episodes:
        raise KernelGymError(f"no whole episode in the trajectories ({report.unfinished} unfinished, "
                             f"{report.failed} failed)")
    buffers = []
    for i, ep in enumerate(report.episodes):
        actions = [space_action(a) for a in ep.actions]
        buffers.append(EpisodeBuffer(
            id=i,
            observations={k: [str(o.get(k, "")) for o in ep.observations] for k in ("output", "prompt")},
            actions={k: [a[k] for a in actions] for k in ("kind", *_TEXT_FIELDS, "config")},
            rewards=ep.rewards, terminations=ep.terminations, truncations=ep.truncations,
            infos={"json": [json.dumps(info, default=str) for info in ep.infos],
                   "action_json": [""] + [a if isinstance(a, str) else json.dumps(a, default=str) for a in ep.actions]}))
    extra = ([f"kernelgym episodes of {env_id}"] if env_id else []) + ([description] if description else [])
    with warnings.catch_warnings():
        # Minari warns for each optional metadata field left out (author, code link, env spec): the env spec stays
        # out because Minari would build the env to read its spaces, and a kernelgym env makes a workspace.
        warnings.filterwarnings("ignore", category=UserWarning, module=r"minari\.")
        try:
            dataset = minari.create_dataset_from_buffers(
                dataset_id, buffers, observation_space=observation_space(), action_space=action_space(),
                algorithm_name=algorithm_name, author=author, description="; ".join(extra) or None,
                data_format=data_format)
        except ImportError as e:
            raise KernelGymError(f"Minari's {data_format} storage needs a package ({e}): pip install "
                                 f"'kernelgym[data]'") from None
        except (ValueError, AssertionError) as e:
            raise KernelGymError(f"Minari refused dataset {dataset_id!r}: {e}") from None
    return dataset, report
