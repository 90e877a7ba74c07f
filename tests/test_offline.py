"""Offline-RL datasets: trajectories read back as whole episodes, and written as Minari datasets."""
import json
import re

import pytest

from kernelgym.cli import main
from kernelgym.errors import KernelGymError
from kernelgym.offline import read_episodes, space_action
from kernelgym.spaces import ACTION_KINDS
from kernelgym.wrappers import TRAJECTORY_FORMAT


def _line(event, **fields):
    return json.dumps({"format": TRAJECTORY_FORMAT, "event": event, **fields})


def _reset(n):
    return _line("reset", episode_id=f"e{n}", observation={"output": "", "prompt": f"p{n}"}, info={"step": 0})


def _step(output, reward=0.0, terminated=False, truncated=False, **extra):
    return _line("step", action={"kind": "shell", "cmd": output}, observation={"output": output, "prompt": ""},
                 reward=reward, terminated=terminated, truncated=truncated, info={"action_error": None}, **extra)


def test_only_whole_episodes_are_read(tmp_path):
    path = tmp_path / "trajectories.jsonl"
    path.write_text("\n".join([
        _reset(1), _step("a", policy={"usage": {"input_tokens": 3}}), _step("b", 120.0, terminated=True),
        _reset(2), _step("c"), _line("error", action={"kind": "submit"}, error="RuntimeError()"),  # env raised
        _reset(3), _step("d", 20.0, truncated=True),
        _reset(4), _step("e"),  # the run was killed here
    ]) + "\n")
    report = read_episodes([tmp_path])  # a run directory: its trajectories.jsonl
    assert [ep.episode_id for ep in report.episodes] == ["e1", "e3"]
    assert report.failed == 1 and report.unfinished == 1
    first = report.episodes[0]
    assert [o["output"] for o in first.observations] == ["", "a", "b"] and first.rewards == [0.0, 120.0]
    assert first.terminations == [False, True] and first.truncations == [False, False]
    assert first.infos[1]["policy"] == {"usage": {"input_tokens": 3}} and "policy" not in first.infos[2]
    assert report.episodes[1].truncations == [True]


def test_a_foreign_line_is_a_clear_error(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(_reset(1) + "\n" + json.dumps({"event": "step"}) + "\n")
    with pytest.raises(KernelGymError, match=r"t.jsonl:2: not a kernelgym.trajectory/1 record"):
        read_episodes([path])
    path.write_text("{not json\n")
    with pytest.raises(KernelGymError, match=r"t.jsonl:1: not a JSON line"):
        read_episodes([path])


def test_actions_take_the_spaces_form():
    assert space_action('{"kind": "edit_file", "path": "k.py", "old": "a", "new": "b"}') == {
        "kind": ACTION_KINDS.index("edit_file"), "cmd": "", "path": "k.py", "content": "", "old": "a", "new": "b",
        "config": 0}
    assert space_action({"kind": "profile", "config": 3})["config"] == 3
    malformed = space_action({"kind": "edit_file", "path": "k.py"})  # no old/new: the env answered with an error
    assert malformed["kind"] == ACTION_KINDS.index("edit_file") and malformed["path"] == ""
    assert space_action({"kind": "bogus"})["kind"] == ACTION_KINDS.index("shell")
    assert space_action(["not", "a", "dict"])["kind"] == ACTION_KINDS.index("shell")


def test_a_run_exports_as_a_minari_dataset(tmp_path, monkeypatch, capsys, require_bwrap):
    import minari  # kernelgym[data], installed by .ci/setup

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))
    actions = [{"kind": "shell", "cmd": "echo hi"}, {"kind": "edit_file", "path": "kernel.py"}]
    assert main(["run", "--task", "triton-softmax", "--policy", "scripted", "--episodes", "2", "--run-dir",
                 str(tmp_path / "runs"), "--policy-config", json.dumps({"actions": actions})]) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    capsys.readouterr()
    assert main(["export", str(run_dir), "--minari", "kernelgym/softmax/scripted-v0", "--algorithm", "scripted"]) == 0
    assert "2 episodes, 6 steps" in capsys.readouterr().out
    dataset = minari.load_dataset("kernelgym/softmax/scripted-v0")
    assert dataset.total_episodes == 2 and dataset.storage.metadata["algorithm_name"] == "scripted"
    records = [json.loads(x) for x in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    resets = [r for r in records if r["event"] == "reset"]
    for episode, reset in zip(dataset.iterate_episodes(), resets, strict=True):
        assert list(episode.actions["kind"]) == [ACTION_KINDS.index(k) for k in ("shell", "edit_file", "submit")]
        assert episode.actions["cmd"][0] == "echo hi" and "hi" in episode.observations["output"][1]
        assert episode.observations["output"][2].startswith("error:")  # the malformed edit's observation
        assert list(episode.rewards) == [0.0, 0.0, 120.0] and bool(episode.terminations[-1])
        assert json.loads(episode.infos["action_json"][2]) == actions[1]
        assert json.loads(episode.infos["json"][-1])["grade"]["score"] == 120.0
        assert episode.observations["prompt"][0] == reset["observation"]["prompt"]
    # The same id again: Minari refuses to overwrite, and the command says so.
    assert main(["export", str(run_dir), "--minari", "kernelgym/softmax/scripted-v0"]) == 2
    assert "already exists" in capsys.readouterr().out


@pytest.mark.parametrize("line, why", [
    (_step("a").replace('"reward": 0.0', '"reward": "abc"'), "a step record, but its reward 'abc' is not a finite"),
    (_step("a").replace('"reward": 0.0', '"reward": NaN'), "a step record, but its reward nan is not a finite"),
    (_step("a").replace('"observation": {"output": "a", "prompt": ""}', '"observation": [1]'),
     "a step record, but its observation is not an object"),
    (_step("a").replace('"info": {"action_error": null}', '"info": [1, 2]'), "a step record, but its info is not"),
    (_step("a", policy=[1]), "a step record, but its policy report is not an object"),
    (_step("a").replace('"info": {"action_error": null}', '"info": {"grade": [1]}'), "its grade is not an object"),
    ('{"format": "kernelgym.trajectory/1", "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "2: not a JSON line"),
])
def test_a_malformed_record_is_a_clear_error_not_a_traceback(tmp_path, line, why):
    # Each of these raised KeyError, AttributeError, TypeError, ValueError or RecursionError out of the export.
    path = tmp_path / "t.jsonl"
    path.write_text(_reset(1) + "\n" + line + "\n")
    with pytest.raises(KernelGymError, match=re.escape(why)):
        read_episodes([path])


def test_a_fifo_is_refused_not_read_forever(tmp_path):
    import os

    from kernelgym.offline import trajectory_sources
    (tmp_path / "run").mkdir()
    os.mkfifo(tmp_path / "run" / "trajectories.jsonl")
    os.mkfifo(tmp_path / "planted.jsonl")
    with pytest.raises(KernelGymError, match="not a regular file"):
        read_episodes([tmp_path / "run"])
    kept, skipped = trajectory_sources([tmp_path / "planted.jsonl"])
    assert kept == [] and skipped == [f"{tmp_path / 'planted.jsonl'}: not a regular file"]
