"""`kernelgym replay TRAJECTORY` (kernelgym/replay.py): a recorded scripted episode replayed on the CPU interpreter
gives its grade back (exit 0); a recording whose score and one verdict were tampered with does not (exit 1, the
differing checks named); bad input exits 2. The timed comparison (noise bands) is checked on grades made up here."""
from __future__ import annotations

import json
import shutil

import pytest

from kernelgym.cli import main
from kernelgym.discovery import get_task
from kernelgym.replay import REPLAY_RECORD, compare_grades

ACTIONS = [{"kind": "edit_file", "path": "kernel.py", "old": "BLOCK_SIZE = 1024", "new": "BLOCK_SIZE = 512"},
           {"kind": "read_file", "path": "missing.py"},  # an action error: no such file
           {"kind": "shell"}]  # an action error: no cmd


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory):
    """The run directory of one scripted episode on the CPU interpreter."""
    if shutil.which("bwrap") is None:  # not a skip: the suite's sandbox claims must be shown
        pytest.fail("bubblewrap is required for the test suite: apt-get install bubblewrap (.ci/run does this)")
    runs = tmp_path_factory.mktemp("runs")
    assert main(["run", "--task", "triton-rmsnorm", "--policy", "scripted", "--policy-config",
                 json.dumps({"actions": ACTIONS}), "--run-dir", str(runs), "--seed", "3"]) == 0
    (run_dir,) = runs.iterdir()
    return run_dir


def _records(run_dir):
    return [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]


def test_a_replay_gives_the_recorded_grade_back(recorded_run, tmp_path, capsys):
    assert main(["replay", str(recorded_run), "--run-dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "the recorded grade came back" in printed
    (replay_dir,) = tmp_path.iterdir()
    record = json.loads((replay_dir / REPLAY_RECORD).read_text())
    assert record["matched"] is True and record["notes"] == []
    checks = {c["name"]: c for c in record["checks"]}
    assert checks["score"]["recorded"] == checks["score"]["replayed"] == 120.0
    assert checks["refused actions"]["replayed"] == "steps 2, 3"  # the missing file and the shell without cmd
    assert sum(name.startswith("config ") for name in checks) == 3
    replayed = [r["action"] for r in _records(replay_dir) if r["event"] == "step"]
    assert replayed == ACTIONS + [{"kind": "submit"}]
    episode_id = _records(replay_dir)[0]["episode_id"]  # reset with the recorded seed
    assert json.loads((replay_dir / "episodes" / episode_id / "episode.json").read_text())["seed"] == 3


def test_a_tampered_recording_is_reported(recorded_run, tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(recorded_run / "run.json", run_dir)
    records = _records(recorded_run)
    (run_dir / "episodes" / records[0]["episode_id"]).mkdir(parents=True)
    shutil.copy(recorded_run / "episodes" / records[0]["episode_id"] / "episode.json",
                run_dir / "episodes" / records[0]["episode_id"])
    grade = records[-1]["info"]["grade"]
    grade["score"] = 119.0
    grade["configs"][1]["correct"] = False
    (run_dir / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))

    assert main(["replay", str(run_dir / "trajectories.jsonl"), "--run-dir", str(tmp_path / "replays")]) == 1
    printed = capsys.readouterr().out
    config = json.dumps(grade["configs"][1]["config"], sort_keys=True)
    assert f"the grade did not come back: score, config {config} differ" in printed


def test_a_recording_cut_by_its_budget_is_ended_by_a_truncating_submit(recorded_run, tmp_path):
    """A recording that ended truncated after its last action (its time budget), without run.json: the replay, given
    room for every action, ends it with a truncating submit, and the grade of the same kernel comes back."""
    from kernelgym.replay import replay_episode

    records = _records(recorded_run)
    submit = records.pop()
    records[-1].update(truncated=True, reward=submit["reward"], info={**records[-1]["info"],
                                                                    "grade": submit["info"]["grade"]})
    (tmp_path / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    result = replay_episode(tmp_path / "trajectories.jsonl", run_dir=tmp_path / "replays")
    assert result.matched, [c for c in result.checks if c.ok is False]
    assert [c.replayed for c in result.checks if c.name in ("steps", "ending")] == [len(ACTIONS), "truncated"]
    assert any("truncating submit" in n for n in result.notes) and any("no seed recorded" in n for n in result.notes)


def test_bad_input_exits_2(recorded_run, tmp_path, capsys):
    assert main(["replay", str(recorded_run), "--episode", "2", "--run-dir", str(tmp_path)]) == 2
    assert "no episode 2; it holds 1 whole episode: give --episode 1..1" in capsys.readouterr().out
    (tmp_path / "notes.jsonl").write_text('{"hello": 1}\n')
    assert main(["replay", str(tmp_path / "notes.jsonl"), "--run-dir", str(tmp_path)]) == 2
    assert "not a kernelgym.trajectory/1 record" in capsys.readouterr().out
    assert main(["replay", str(tmp_path / "absent.jsonl")]) == 2
    assert not any(p.is_dir() for p in tmp_path.iterdir())  # nothing was replayed


def _timed_grade(speedups, bands, outcome="faster"):
    configs = [{"config": {"n": i}, "correct": True, "speedup": s, "noise_band": b}
               for i, (s, b) in enumerate(zip(speedups, bands))]
    return {"interpreter": False, "compiled": True, "correct": True, "outcome": outcome, "configs": configs,
            "speedup": sum(speedups) / len(speedups), "score": 120 + 100 * sum(speedups) / len(speedups)}


def test_timed_grades_agree_within_the_noise_band():
    recorded = _timed_grade([1.10, 1.00], [[1.08, 1.12], [0.99, 1.01]])
    close = _timed_grade([1.11, 1.005], [[1.09, 1.13], [0.995, 1.02]], outcome="no_gain")
    assert all(c.ok is not False for c in compare_grades(recorded, close))
    assert next(c for c in compare_grades(recorded, close) if c.name == "score").ok is None  # shown, not compared

    # the H100's case (2026-12-07): the replayed speedup lies outside the recorded band and the recorded one outside
    # the replay's, but the two bands overlap: the same kernel, two samples
    overlapping = _timed_grade([1.10, 1.015], [[1.08, 1.12], [1.005, 1.03]])
    assert all(c.ok is not False for c in compare_grades(recorded, overlapping))

    # the second config's bands do not overlap; nor do the mean bands ([1.035, 1.065] against [1.07, 1.09])
    far = _timed_grade([1.11, 1.05], [[1.10, 1.12], [1.04, 1.06]])
    assert [c.name for c in compare_grades(recorded, far) if c.ok is False] == ["speedup (mean)",
                                                                                'config {"n": 1} speedup']
    # a timed grade without bands (an older run): within NO_BAND_TOLERANCE (2%) of the recorded speedup
    plain = _timed_grade([1.10], [None])
    assert all(c.ok is not False for c in compare_grades(plain, _timed_grade([1.11], [None])))
    assert not all(c.ok is not False for c in compare_grades(plain, _timed_grade([1.20], [None])))


def test_untimed_grades_must_be_identical():
    recorded = {"interpreter": True, "compiled": True, "correct": True, "outcome": "correct_not_timed",
                "score": 120.0, "configs": [{"config": {"n": 0}, "correct": True}]}
    assert all(c.ok for c in compare_grades(recorded, dict(recorded)))
    wrong = {**recorded, "correct": False, "outcome": "incorrect", "score": 20.0,
             "configs": [{"config": {"n": 0}, "correct": False}]}
    assert [c.name for c in compare_grades(recorded, wrong) if c.ok is False] == [
        "correct", "outcome", "score", 'config {"n": 0}']
    missing = {**recorded, "configs": []}
    assert [c.name for c in compare_grades(recorded, missing) if c.ok is False] == ['config {"n": 0}']


def _hostile_copy(recorded_run, root, settings=None, episode_id=None, cmd=None):
    """A copy of the recorded run with run.json's `settings` changed, every record's episode id `episode_id` and
    the first action `cmd` (a shell command), where given."""
    run_dir = root / "hostile"
    run_dir.mkdir()
    run = {**json.loads((recorded_run / "run.json").read_text()), **(settings or {})}
    (run_dir / "run.json").write_text(json.dumps(run))
    records = _records(recorded_run)
    for r in records:
        r["episode_id"] = episode_id or r["episode_id"]
    if cmd:
        records[1]["action"] = {"kind": "shell", "cmd": cmd}
        records[1]["info"].pop("action_error", None)
    (run_dir / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run_dir


def test_a_recording_cannot_turn_the_sandbox_off_nor_name_a_folder_outside(recorded_run, tmp_path, capsys):
    # run.json's no_sandbox turned the sandbox off for the recorded shell commands (they ran on the host), and an
    # episode id of ../ put the replay's run directory outside --run-dir.
    marker = tmp_path / "written-by-the-recording"
    hostile = _hostile_copy(recorded_run, tmp_path, {"no_sandbox": True}, episode_id="../../../escaped",
                            cmd=f"touch {marker}")
    main(["replay", str(hostile), "--run-dir", str(tmp_path / "replays" / "here")])
    printed = capsys.readouterr().out
    assert not marker.exists(), "the recorded command ran outside the sandbox"
    assert [p.name for p in (tmp_path / "replays").iterdir()] == ["here"] and not (tmp_path / "escaped").exists()
    (replay_dir,) = (tmp_path / "replays" / "here").iterdir()
    assert replay_dir.name.endswith("-replay-episode1")
    notes = json.loads((replay_dir / REPLAY_RECORD).read_text())["notes"]
    assert any("no plain folder name" in n for n in notes) and any("no_sandbox" in n for n in notes), printed


@pytest.mark.parametrize("settings, message", [
    ({"task": "{evil}"}, "the recording names task folder"),
    ({"tasks_dir": "{evil}"}, "the recording's run.json names tasks_dir"),
])
def test_a_task_folder_named_by_the_recording_is_refused(recorded_run, tmp_path, capsys, settings, message):
    # A task's reference runs in the replaying process, unsandboxed: the recording must not choose its folder.
    evil = tmp_path / "evil-task"
    shutil.copytree(get_task("triton-rmsnorm").root, evil)
    marker = tmp_path / "written-by-the-task"
    with (evil / "reference.py").open("a") as f:
        f.write(f"\nopen({str(marker)!r}, 'w').write('ran')\n")
    hostile = _hostile_copy(recorded_run, tmp_path, {k: v.format(evil=evil) for k, v in settings.items()})
    assert main(["replay", str(hostile), "--run-dir", str(tmp_path / "replays")]) == 2
    assert message in capsys.readouterr().out and not marker.exists()
