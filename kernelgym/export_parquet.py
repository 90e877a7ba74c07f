"""Recorded episodes as a Hugging Face Parquet dataset of chat conversations: ``kernelgym export RUN... --parquet DIR``.

One row per whole episode (`kernelgym.offline.read_episodes`), written with pyarrow to ``DIR/train.parquet``, so
that ``datasets.load_dataset("parquet", data_files="DIR/train.parquet")`` (or ``load_dataset("DIR")``) loads it
and TRL's SFT trainer and verl's multi-turn SFT take its ``messages`` and ``tools`` as they are. The columns are
`COLUMNS`' keys; docs/OFFLINE.md describes each.

``messages`` is the episode in the OpenAI chat format:

- ``{"role": "system", "content": <the env's prompt at reset>}`` first (a ``user`` message follows where the reset's
  observation had output).
- per step, the policy's turn ``{"role": "assistant", "content": <the model's text, or "">, "tool_calls": [{"id",
  "type": "function", "function": {"name": <action kind>, "arguments": <JSON text>}}]}``, then the env's observation
  as that call's result ``{"role": "tool", "tool_call_id", "name", "content"}``. Tool calls a model made in one reply
  (the steps after the first report no usage) share one assistant turn, their results following in order.
- an action that is no JSON object (malformed text the env refused) is an assistant turn of that text without a
  tool call, and its observation a ``user`` turn.

Every message has every key (Parquet's columns are typed): the ones a role does not use are null.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from kernelgym.agent_tools import openai_tools
from kernelgym.errors import KernelGymError
from kernelgym.offline import ReadReport, RecordedEpisode, read_episodes
from kernelgym.rollout import episode_outcome
from kernelgym.spaces import ACTION_KINDS, KIND_FIELDS
from kernelgym.usage import TOKEN_FIELDS, StepUsage, episode_totals

#: The file written in the export folder (a ``train`` split for `datasets.load_dataset` of the folder).
PARQUET_FILE = "train.parquet"
#: The outcome of an episode recorded before grades carried one.
UNKNOWN_OUTCOME = "unknown"
#: Each column and its type ("messages" is the list of message structs the module docstring describes).
COLUMNS = {"episode_id": "str", "task": "str", "hardware": "str", "policy": "str", "model": "str",
           "messages": "messages", "tools": "str", "reward": "float", "outcome": "str", "grade_outcome": "str",
           "speedup": "float", "grade": "str", "steps": "int", "terminated": "bool", "truncated": "bool",
           **{name: "int" for name in TOKEN_FIELDS}, "cost_usd": "float", "api_calls": "int", "source": "str"}

_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def _schema():
    """The Parquet schema of a row (pyarrow is imported here: `import kernelgym` does not need it)."""
    import pyarrow as pa

    call = pa.struct([("id", pa.string()), ("type", pa.string()),
                      ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])
    message = pa.struct([("role", pa.string()), ("content", pa.string()), ("tool_calls", pa.list_(call)),
                         ("tool_call_id", pa.string()), ("name", pa.string())])
    return pa.schema([(name, {"str": pa.string(), "float": pa.float64(), "int": pa.int64(), "bool": pa.bool_(),
                              "messages": pa.list_(message)}[kind]) for name, kind in COLUMNS.items()])


@dataclass
class ParquetExport:
    """What `to_parquet` wrote: the file, its rows, and the `ReadReport` of what was left out."""

    path: Path
    rows: list[dict[str, Any]] = field(default_factory=list)
    report: ReadReport | None = None


def _message(**fields: Any) -> dict[str, Any]:
    return {key: fields.get(key) for key in _MESSAGE_KEYS}


def _tool_call(action: Any, policy_record: dict, step: int) -> dict[str, Any] | None:
    """The OpenAI tool call of one step: the model's own call where the policy recorded it (``tool_call``), else
    the action as a call of the tool named by its kind; None for an action that is no JSON object."""
    recorded = policy_record.get("tool_call")
    if isinstance(recorded, dict) and recorded.get("name"):
        arguments = recorded.get("arguments")
        text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
        return {"id": str(recorded.get("id") or f"call_{step}"), "type": "function",
                "function": {"name": str(recorded["name"]), "arguments": text}}
    if isinstance(action, str):
        try:
            action = json.loads(action)
        except ValueError:
            return None
    if not isinstance(action, dict):
        return None
    kind = action.get("kind")
    if isinstance(kind, int) and not isinstance(kind, bool) and 0 <= kind < len(ACTION_KINDS):
        kind = ACTION_KINDS[kind]  # the action space's index form (a vector env's, a space sample)
    if not isinstance(kind, str):
        return None
    # A space sample carries every field; the ones this kind does not take, left at their defaults, say nothing.
    arguments = {k: v for k, v in action.items()
                 if k != "kind" and (k in KIND_FIELDS.get(kind, ()) or v not in ("", 0, None))}
    return {"id": f"call_{step}", "type": "function", "function": {"name": kind, "arguments": json.dumps(arguments)}}


def episode_messages(episode: RecordedEpisode) -> list[dict[str, Any]]:
    """The episode as chat messages (the module docstring's format); every message has every key."""
    reset = episode.observations[0]
    messages = [_message(role="system", content=str(reset.get("prompt", "")))]
    if reset.get("output"):
        messages.append(_message(role="user", content=str(reset["output"])))
    model_policy = any("usage" in (info.get("policy") or {}) for info in episode.infos[1:])
    turn: dict[str, Any] | None = None  # the assistant turn whose calls are still being answered
    for t, action in enumerate(episode.actions, 1):
        record = episode.infos[t].get("policy") or {}
        output = str(episode.observations[t].get("output", ""))
        call = _tool_call(action, record, t)
        if call is None:
            text = action if isinstance(action, str) else json.dumps(action, default=str)
            messages += [_message(role="assistant", content=text), _message(role="user", content=output)]
            turn = None
            continue
        # A model's reply of several calls is one act() that called the model, then acts that only hand out the
        # queued calls (no usage): those join the reply's turn.
        if turn is not None and model_policy and "usage" not in record:
            turn["tool_calls"].append(call)
        else:
            turn = _message(role="assistant", content=str(record.get("text") or ""), tool_calls=[call])
            messages.append(turn)
        messages.append(_message(role="tool", tool_call_id=call["id"], name=call["function"]["name"],
                                 content=output))
    return messages


def _run_context(trajectory: Path) -> tuple[dict, list[dict]]:
    """The run's settings (run.json) and episode results (results.json) beside a trajectory file; empty where
    the file was recorded outside `kernelgym run` or they are unreadable."""
    def load(name: str, kind: type):
        try:
            value = json.loads((trajectory.parent / name).read_text())
        except (OSError, ValueError):
            return kind()
        return value if isinstance(value, kind) else kind()
    return load("run.json", dict), load("results.json", list)


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def episode_row(episode: RecordedEpisode, settings: dict, results: list[dict]) -> dict[str, Any]:
    """One Parquet row for `episode` (`COLUMNS`). `results` are the run's results.json entries: the one whose grade
    is this episode's final grade gives the episode's outcome (a policy that raised is seen there only), and is
    removed from the list so that a later episode of the same grade takes the next one."""
    grade = episode.infos[-1].get("grade") or {}
    records = [info.get("policy") or {} for info in episode.infos[1:]]
    result = next((r for r in results if isinstance(r, dict) and _same(r.get("grade"), grade)), None)
    if result is not None:
        results.remove(result)
    if result is not None and result.get("outcome"):
        outcome = result["outcome"]
    elif grade.get("outcome"):
        error = next((r["policy_error"] for r in records if r.get("policy_error")), None)
        outcome = episode_outcome(grade, error)
    else:
        outcome = UNKNOWN_OUTCOME  # recorded before grades carried an outcome: not guessed from the text
    usages = [StepUsage.from_dict(r["usage"]) if isinstance(r.get("usage"), dict) else None for r in records]
    totals = episode_totals(usages, sum(float(r.get("act_wall_s") or 0.0) for r in records))
    reset_info = episode.infos[0]
    return {"episode_id": episode.episode_id, "task": reset_info.get("task") or grade.get("task"),
            "hardware": reset_info.get("hardware") or grade.get("hardware"), "policy": settings.get("policy"),
            "model": totals.get("model"), "messages": episode_messages(episode), "tools": json.dumps(openai_tools()),
            "reward": episode.rewards[-1], "outcome": outcome, "grade_outcome": grade.get("outcome") or UNKNOWN_OUTCOME,
            "speedup": grade.get("speedup"), "grade": json.dumps(grade, default=str), "steps": len(episode.actions),
            "terminated": episode.terminations[-1], "truncated": episode.truncations[-1],
            **{name: totals.get(name) for name in TOKEN_FIELDS}, "cost_usd": totals.get("cost_usd"),
            "api_calls": totals.get("api_calls"), "source": str(episode.source)}


def to_parquet(paths: Iterable[str | Path], out_dir: str | Path) -> ParquetExport:
    """Write the whole episodes of trajectory files as ``out_dir/train.parquet``, one row per episode.

    Args:
        paths: trajectory JSONL files, or run directories holding ``trajectories.jsonl`` (see
            `kernelgym.offline.trajectory_sources` to drop paths that are neither).
        out_dir: the folder to write; made if missing.

    Returns:
        The `ParquetExport`: the file, the rows as written, and the `ReadReport` (episodes left out).

    Raises:
        KernelGymError: pyarrow is missing, no whole episode was found, the file exists already, a trajectory
            file is unreadable (`read_episodes`), or a value does not fit its column (`_table`).
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        raise KernelGymError(f"Parquet export needs pyarrow ({e}): pip install 'kernelgym[data]'") from None
    out = Path(out_dir) / PARQUET_FILE
    if out.exists():
        raise KernelGymError(f"{out} exists already; remove it, or export to another folder")
    files = [Path(p) / "trajectories.jsonl" if Path(p).is_dir() else Path(p) for p in paths]
    rows, report = [], ReadReport([])
    for path in dict.fromkeys(files):
        part = read_episodes([path])
        settings, results = _run_context(path)
        rows += [episode_row(ep, settings, results) for ep in part.episodes]
        report.episodes += part.episodes
        report.unfinished += part.unfinished
        report.failed += part.failed
    if not rows:
        raise KernelGymError(f"no whole episode in the trajectories ({report.unfinished} unfinished, "
                             f"{report.failed} failed)")
    table = _table(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out)
    return ParquetExport(out, rows, report)


def _table(rows: list[dict[str, Any]]):
    """The rows as a pyarrow table of `_schema`.

    Raises:
        KernelGymError: a row's value does not fit its column (a trajectory file edited or corrupted: a task that
            is no text, a speedup that is no number), naming the episode.
    """
    import pyarrow as pa

    schema = _schema()
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        for row in rows:  # find the row, to say which episode
            try:
                pa.Table.from_pylist([row], schema=schema)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
                raise KernelGymError(f"{row['source']}: episode {row['episode_id']}: a value does not fit its "
                                     f"Parquet column ({e})") from None
        raise
