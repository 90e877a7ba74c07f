"""`kernelgym export RUN... --parquet DIR` (kernelgym/export_parquet.py): one row per episode, its chat messages and
tools, loaded back with `datasets` and taken by TRL's SFT trainer for one step; paths that are no run are skipped.

One scripted run on the CPU interpreter serves the module; its episode is read, edited, refused once (a stray
field) and submitted."""
from __future__ import annotations

import json
import math

import pytest

from kernelgym.cli import main
from kernelgym.export_parquet import UNKNOWN_OUTCOME, episode_messages, episode_row
from kernelgym.offline import read_episodes

ACTIONS = [{"kind": "read_file", "path": "kernel.py"},
           {"kind": "edit_file", "path": "kernel.py", "old": "BLOCK_SIZE = 1024", "new": "BLOCK_SIZE = 2048"},
           {"kind": "bench", "cmd": "ls"}]  # refused: a bench takes no fields


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory):
    """(the run directory of one scripted episode, a folder of run-like paths: that run, a folder with no
    trajectories and a PNG)."""
    import shutil
    if shutil.which("bwrap") is None:  # not a skip: the suite's sandbox claims must be shown
        pytest.fail("bubblewrap is required for the test suite: apt-get install bubblewrap (.ci/run does this)")
    runs = tmp_path_factory.mktemp("runs")
    code = main(["run", "--task", "triton-rmsnorm", "--policy", "scripted", "--policy-config",
                 json.dumps({"actions": ACTIONS}), "--run-dir", str(runs)])
    assert code == 0
    (run_dir,) = runs.iterdir()
    (runs / "grpo" / "episodes").mkdir(parents=True)  # what examples/train_grpo_trl.py leaves under kernelgym-runs/
    (runs / "learning_curve.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    return run_dir, runs


def test_export_skips_paths_that_are_no_run_and_writes_one_row_per_episode(recorded_run, tmp_path, capsys):
    run_dir, runs = recorded_run
    out = tmp_path / "pq"
    assert main(["export", *map(str, sorted(runs.iterdir())), "--parquet", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"skipped: {runs / 'grpo'}: not a run directory (no trajectories.jsonl)" in printed
    assert "learning_curve.png: not a trajectory file" in printed
    assert "1 episode (one row each" in printed

    import datasets
    ds = datasets.load_dataset("parquet", data_files=str(out / "train.parquet"), split="train")
    assert ds.num_rows == 1
    row = ds[0]
    assert (row["task"], row["hardware"], row["policy"]) == ("KernelArena/triton-rmsnorm-v0", "cpu-interpreter",
                                                             "scripted")
    grade = json.loads(row["grade"])
    assert row["reward"] == grade["score"] == 120.0
    results = json.loads((run_dir / "results.json").read_text())
    assert row["outcome"] == results[0]["outcome"] == grade["outcome"] == "correct_not_timed"
    assert row["steps"] == len(ACTIONS) + 1 and row["terminated"] and not row["truncated"]
    assert row["input_tokens"] is None and row["cost_usd"] is None  # the scripted policy calls no model
    tools = json.loads(row["tools"])
    assert [t["function"]["name"] for t in tools] == ["shell", "read_file", "write_file", "edit_file", "profile",
                                                      "bench", "submit"]

    messages = row["messages"]
    assert [m["role"] for m in messages] == ["system"] + ["assistant", "tool"] * (len(ACTIONS) + 1)
    assert messages[0]["content"].startswith("# Task KernelArena/triton-rmsnorm-v0")
    calls = [m["tool_calls"][0] for m in messages if m["role"] == "assistant"]
    assert [c["function"]["name"] for c in calls] == ["read_file", "edit_file", "bench", "submit"]
    assert json.loads(calls[1]["function"]["arguments"]) == {k: v for k, v in ACTIONS[1].items() if k != "kind"}
    assert json.loads(calls[2]["function"]["arguments"]) == {"cmd": "ls"}  # as sent, though the env refused it
    results_of = [m for m in messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results_of] == [c["id"] for c in calls]
    assert "rmsnorm_kernel" in results_of[0]["content"]  # the kernel's source, read
    assert results_of[2]["content"].startswith("error:") and "takes no fields" in results_of[2]["content"]
    assert "score 120.0" in results_of[3]["content"]

    assert main(["export", str(run_dir), "--parquet", str(out)]) == 2  # an existing file is not overwritten
    assert "exists already" in capsys.readouterr().out


def test_export_of_nothing_but_non_runs_is_refused(recorded_run, tmp_path, capsys):
    _, runs = recorded_run
    assert main(["export", str(runs / "grpo"), str(runs / "learning_curve.png"), "--parquet", str(tmp_path)]) == 2
    assert "none of the 2 path(s) is a run directory or trajectory file" in capsys.readouterr().out
    assert main(["export", str(runs)]) == 2  # neither --minari nor --parquet
    assert "give --minari DATASET_ID, --parquet DIR, or both" in capsys.readouterr().out
    assert main(["export", str(runs), "--parquet", str(tmp_path / "x")]) == 2  # the folder of runs, not a run
    assert f"it holds runs: give {runs}/* instead" in capsys.readouterr().out


def test_a_model_reply_of_several_calls_is_one_assistant_turn(recorded_run):
    """Steps whose act handed out a queued call (no usage) join the reply that made them; an action that is no JSON
    object is an assistant text and a user turn; a grade without `outcome` (an older run) gives 'unknown'."""
    run_dir, _ = recorded_run
    episode = read_episodes([run_dir]).episodes[0]
    usage = {"input_tokens": 10, "output_tokens": 5, "cached_tokens": 0, "cache_write_tokens": 0, "cost_usd": 0.25,
             "api_calls": 1, "model": "m"}
    policy = [{"text": "I read, then edit.", "usage": usage, "tool_call": {"id": "a", "name": "read_file",
                                                                             "arguments": {"path": "kernel.py"}}},
              {"tool_call": {"id": "b", "name": "edit_file", "arguments": {"path": "kernel.py", "old": "x",
                                                                           "new": "y"}}},
              {"usage": usage},
              {"text": "done", "usage": usage, "tool_call": {"id": "d", "name": "submit", "arguments": {}}}]
    for info, record in zip(episode.infos[1:], policy):
        info["policy"] = record
    episode.actions[2] = "not json"
    messages = episode_messages(episode)
    assert [m["role"] for m in messages] == ["system", "assistant", "tool", "tool", "assistant", "user",
                                             "assistant", "tool"]
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["a", "b"] and messages[1]["content"] == "I read, then edit."
    assert [messages[2]["tool_call_id"], messages[3]["tool_call_id"]] == ["a", "b"]
    assert messages[4] == {"role": "assistant", "content": "not json", "tool_calls": None, "tool_call_id": None,
                           "name": None}

    del episode.infos[-1]["grade"]["outcome"]
    row = episode_row(episode, {"policy": "anthropic"}, [])
    assert (row["outcome"], row["grade_outcome"]) == (UNKNOWN_OUTCOME, UNKNOWN_OUTCOME)
    assert (row["input_tokens"], row["output_tokens"], row["api_calls"], row["model"]) == (30, 15, 3, "m")
    assert math.isclose(row["cost_usd"], 0.75)


def test_sft_trainer_takes_the_export_for_one_step(recorded_run, tmp_path):
    pytest.importorskip("trl")  # kernelgym[trl], installed by .ci/setup
    import datasets
    from trl import SFTConfig, SFTTrainer

    from tests.test_integration_trl import tiny_model_and_tokenizer

    run_dir, _ = recorded_run
    assert main(["export", str(run_dir), "--parquet", str(tmp_path / "pq")]) == 0
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "pq" / "train.parquet"), split="train")
    model, tokenizer = tiny_model_and_tokenizer([m["content"] for m in ds[0]["messages"]])
    args = SFTConfig(output_dir=str(tmp_path / "out"), max_steps=1, per_device_train_batch_size=1, report_to=[],
                     max_length=None, use_cpu=True, save_strategy="no", logging_steps=1)
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer)
    text = tokenizer.decode(trainer.train_dataset[0]["input_ids"])
    # the chat template rendered the tools, the calls and their results
    assert '"name": "edit_file"' in text and "<tool_response>" in text and "score 120.0" in text
    output = trainer.train()
    assert trainer.state.global_step == 1 and math.isfinite(output.training_loss)


def test_a_value_that_does_not_fit_its_column_names_the_episode(recorded_run, tmp_path, capsys):
    # A task that is no text raised pyarrow's ArrowTypeError out of the command.
    run_dir, _ = recorded_run
    records = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    records[0]["info"]["task"] = 5
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["export", str(edited), "--parquet", str(tmp_path / "out")]) == 2
    out = capsys.readouterr().out
    assert f"episode {records[0]['episode_id']}: a value does not fit its Parquet column" in out
    assert not (tmp_path / "out").exists()
