"""The main job end to end on the interpreter: `kernelgym run --task triton-softmax --policy tuner`."""
import json
import shutil
import subprocess
import sys

import pytest

from kernelgym.cli import main
from kernelgym.task import DEFAULT_TASKS_ROOT
from kernelgym.wrappers import TRAJECTORY_FORMAT

BUILTIN = DEFAULT_TASKS_ROOT / "triton" / "rmsnorm"


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "triton-rmsnorm" in out and "tuner" in out and "mi300x" in out


def test_run_tuner_end_to_end(tmp_path, require_bwrap):
    # A reduced grid keeps CI fast; the default grid is exercised on the GPU (benchmarks/results).
    overrides = json.dumps({"params": {"BLOCK_SIZE": [512], "NUM_WARPS": [2]}})
    proc = subprocess.run([sys.executable, "-m", "kernelgym.cli", "run", "--task", "triton-softmax", "--policy", "tuner",
                           "--policy-config", overrides, "--run-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Result" in proc.stdout and "120.0" in proc.stdout
    # What the main job shows a new user without a GPU: the one-pass rewrite, submitted on the model's word.
    assert "Submitted: rewrite 'softmax one pass per row'" in proc.stdout and "bytes moved x0.500" in proc.stdout
    assert "mostly the launch" in proc.stdout  # why half the bytes moves the model's estimate so little there
    assert "results: " in proc.stdout and "kernelgym report " in proc.stdout  # where the run's files are
    (run_dir,) = tmp_path.iterdir()
    results = json.loads((run_dir / "results.json").read_text())
    assert results[0]["reward"] == 120.0 and results[0]["terminated"]
    lines = [json.loads(x) for x in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    assert lines[0]["event"] == "reset" and lines[-1]["event"] == "step" and lines[-1]["reward"] == 120.0
    assert all(x["format"] == TRAJECTORY_FORMAT for x in lines)
    kinds = [x["action"]["kind"] for x in lines[1:]]
    assert kinds[0] == "read_file" and kinds.count("shell") == 3 and kinds[-1] == "submit"


def test_an_empty_policy_config_is_a_clear_error(capsys):
    assert main(["run", "--task", "triton-softmax", "--policy", "scripted", "--policy-config", " "]) == 2
    assert "--policy-config is empty" in capsys.readouterr().out


def test_unknown_policy_is_clear_error(capsys):
    assert main(["run", "--policy", "tunr"]) == 2
    assert "Did you mean 'tuner'" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["run", "--task", "nope"]])
def test_unknown_task_is_clear_error(argv, capsys):
    assert main(argv) == 2
    assert "Unknown task 'nope'" in capsys.readouterr().out


def _user_tasks(root):
    """A user task folder with one good task (a copy of rmsnorm, id rmsnorm-cli) and one broken task.yaml."""
    good = root / "triton" / "rmsnorm-cli"
    shutil.copytree(BUILTIN, good, ignore=shutil.ignore_patterns("__pycache__"))
    (good / "task.yaml").write_text((good / "task.yaml").read_text().replace("id: rmsnorm\n", "id: rmsnorm-cli\n"))
    broken = root / "triton" / "broken"
    broken.mkdir(parents=True)
    (broken / "task.yaml").write_text("id: broken\nlanguage: triton\nkind: [unclosed\n")
    return good, broken


def test_list_shows_language_hardware_and_broken_tasks(tmp_path, capsys, monkeypatch):
    # A console wide enough that no cell wraps: the error cell holds tmp_path twice, and under xdist (a longer tmp_path)
    # the 200-column console folded "not valid YAML" across two lines.
    from rich.console import Console

    import kernelgym.cli as cli
    monkeypatch.setattr(cli, "console", Console(width=4000))
    good, broken = _user_tasks(tmp_path)
    assert main(["list", "--tasks-dir", str(tmp_path)]) == 0  # a broken task is reported, not fatal
    out = capsys.readouterr().out
    assert "KernelArena/triton-rmsnorm-cli-v0" in out and "triton2triton" in out
    row = next(line for line in out.splitlines() if "KernelArena/triton-rmsnorm-v0" in line)
    assert "cpu-interpreter" in row  # supported hardware: Triton runs everywhere, the interpreter included
    assert "Broken tasks (1" in out and "not valid YAML" in out
    assert "scripted" in out and "h200" in out


def test_validate_builtin_task_passes(capsys, require_bwrap):
    assert main(["validate", str(BUILTIN)]) == 0
    out = capsys.readouterr().out
    for name in ("task.yaml loads", "name is unique", "reference is not trivial", "unseen configs",
                 "baseline is correct"):
        assert name in out
    assert "all 6 checks passed" in out and "FAIL" not in out


def test_validate_broken_task_fails_with_its_message(tmp_path, capsys):
    _, broken = _user_tasks(tmp_path)
    assert main(["validate", str(broken)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "not valid YAML" in out and "1 of 6 checks failed, 5 not run" in out
    # By name, from the search path: the broken folder is still found and reported.
    assert main(["validate", "triton-broken", "--tasks-dir", str(tmp_path)]) == 1
    assert "not valid YAML" in capsys.readouterr().out


def test_validate_catches_a_reference_that_zeros_pass(tmp_path):
    # A reference whose output is all zeros lets a kernel that computes nothing pass the correctness gate.
    from kernelgym.hardware import detect_profile
    from kernelgym.task import load_task
    from kernelgym.validate import check_reference
    good, _ = _user_tasks(tmp_path)
    ref = good / "reference.py"
    ref.write_text(ref.read_text().replace("return xf * rstd * weight.float()",
                                           "return (xf * rstd * weight.float()) * 0"))
    check = check_reference(load_task(good), detect_profile("cpu-interpreter"))
    assert check.passed is False and "all-zero output passes" in check.message, check.message


def test_validate_name_clash_fails_on_both_sides(tmp_path):
    from kernelgym.task import load_task
    from kernelgym.validate import check_unique_name
    dup = tmp_path / "dup" / "rmsnorm"
    shutil.copytree(BUILTIN, dup, ignore=shutil.ignore_patterns("__pycache__"))
    check = check_unique_name(load_task(dup), tmp_path / "dup")
    assert check.passed is False and f"also used by the task at {BUILTIN}" in check.message
    check = check_unique_name(load_task(BUILTIN), tmp_path / "dup")
    assert check.passed is False and str(dup) in check.message
    assert check_unique_name(load_task(BUILTIN), None).passed


@pytest.mark.parametrize("act, code", [("return {'kind': 'submit'}", 0),
                                       ("raise RuntimeError('model unreachable [transcript: t.jsonl]')", 3)])
def test_run_user_task_and_policy_from_dirs(tmp_path, require_bwrap, act, code):
    """A user's task and policy from their folders; a policy that fails every episode still has its kernel graded,
    and the run exits 3."""
    good, _ = _user_tasks(tmp_path / "tasks")
    policy = tmp_path / "policies" / "just-submit"
    policy.mkdir(parents=True)
    (policy / "policy.py").write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass JustSubmitConfig:\n    pass\n\n\n"
        "class JustSubmitPolicy:\n    def __init__(self, config):\n        pass\n\n"
        "    def reset(self, observation, info):\n        pass\n\n"
        f"    def act(self, observation, info):\n        {act}\n")
    proc = subprocess.run([sys.executable, "-m", "kernelgym.cli", "run", "--task", "triton-rmsnorm-cli",
                           "--tasks-dir", str(tmp_path / "tasks"), "--policy", "just-submit", "--policies-dir",
                           str(tmp_path / "policies"), "--run-dir", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "KernelArena/triton-rmsnorm-cli-v0 with policy just-submit" in proc.stdout
    if code == 3:  # printed as text: square brackets in an error are not markup
        assert "model unreachable [transcript: t.jsonl]" in proc.stdout.replace("\n", "")
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert run_dir.stat().st_mode & 0o777 == 0o700
    results = json.loads((run_dir / "results.json").read_text())
    assert results[0]["reward"] == 120.0  # the unchanged baseline compiles and is correct


def test_run_refuses_non_positive_counts_with_a_usage_error(capsys):
    from kernelgym.cli import main
    for flag in ("--max-steps", "--episodes"):
        with pytest.raises(SystemExit) as e:
            main(["run", flag, "0"])
        assert e.value.code == 2 and "must be at least 1" in capsys.readouterr().err


def test_a_killed_run_leaves_a_readable_trajectory_and_resumes(tmp_path, require_bwrap):
    """SIGKILL mid-episode: every trajectory line already written parses, and `--resume` keeps the finished episode,
    reruns the killed one and finishes the run."""
    import os
    import signal
    import time
    policy = tmp_path / "policies" / "slow-second"
    policy.mkdir(parents=True)
    (policy / "policy.py").write_text(
        "import os, time\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass SlowSecondConfig:\n    pass\n\n\n"
        "class SlowSecondPolicy:\n    def __init__(self, config):\n        self.episodes = 0\n\n"
        "    def reset(self, observation, info):\n        self.episodes += 1\n\n"
        "    def act(self, observation, info):\n"
        "        if self.episodes == 2 and os.environ.get('KG_TEST_HANG'):\n            time.sleep(600)\n"
        "        return {'kind': 'submit'}\n")
    cmd = [sys.executable, "-m", "kernelgym.cli", "run", "--policy", "slow-second", "--policies-dir",
           str(tmp_path / "policies"), "--run-dir", str(tmp_path / "runs"), "--episodes", "3"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "KG_TEST_HANG": "1"}, start_new_session=True)
    deadline = time.monotonic() + 300
    results = None
    while time.monotonic() < deadline:  # until the first episode is written and the second has started
        runs = list((tmp_path / "runs").glob("*"))
        traj = runs[0] / "trajectories.jsonl" if runs else None
        if traj and (runs[0] / "results.json").exists() and len(traj.read_text().splitlines()) >= 3:
            results = runs[0] / "results.json"  # the second episode's reset is written: its policy hangs now
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert results is not None, proc.stdout.read()
    run_dir = results.parent
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    assert [json.loads(line)["event"] for line in lines][:3] == ["reset", "step", "reset"]
    assert len(json.loads(results.read_text())) == 1
    done = subprocess.run([sys.executable, "-m", "kernelgym.cli", "run", "--resume", str(run_dir)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resuming: 1 of 3 episodes finished before" in done.stdout
    assert [r["reward"] for r in json.loads(results.read_text())] == [120.0] * 3


def test_resume_refuses_a_folder_that_is_not_a_run(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kernelgym.cli", "run", "--resume", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "not a run directory" in proc.stderr + proc.stdout


def test_run_refuses_a_task_the_hardware_cannot_run_before_making_a_run_dir(tmp_path, capsys):
    runs = tmp_path / "runs"
    assert main(["run", "--task", "cuda-gelu", "--run-dir", str(runs)]) != 0
    out = capsys.readouterr()
    assert "cpu-interpreter cannot run" in out.out + out.err
    assert not runs.exists()


def test_run_json_names_absolute_folders_so_a_resume_works_from_anywhere(tmp_path, monkeypatch):
    """Found by a new user: run.json kept `--tasks-dir tests/data/reference_tasks` as given, so `--resume` from another
    working directory could not find the task."""
    import argparse

    from kernelgym.cli import _absolute_paths
    (tmp_path / "mytasks" / "t1").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    args = argparse.Namespace(tasks_dir=["mytasks"], policies_dir=None, hardware_dir=["hw"], task="mytasks/t1")
    _absolute_paths(args)
    assert args.tasks_dir == [str(tmp_path / "mytasks")] and args.hardware_dir == [str(tmp_path / "hw")]
    assert args.task == str(tmp_path / "mytasks" / "t1") and args.policies_dir is None


def test_validate_does_not_call_checks_not_run_passed(tmp_path, capsys, monkeypatch):
    """Found by a new user: `all 6 checks passed` was printed when 2 of them had not run."""
    import kernelgym.validate
    from kernelgym.validate import Check
    monkeypatch.setattr(kernelgym.validate, "validate_task", lambda *a, **k: [
        Check("task.yaml loads", True, "ok"), Check("hardware", None, "not run: no GPU"), Check("x", True, "ok")])
    assert main(["validate", str(DEFAULT_TASKS_ROOT / "triton" / "rmsnorm")]) == 0
    out = capsys.readouterr().out
    assert "2 of 3 checks passed" in out and "1 not run" in out and "all 3 checks passed" not in out


def test_task_patterns_select_what_this_hardware_runs():
    from kernelgym.cli import select_tasks
    from kernelgym.hardware import all_profiles
    from kernelgym.errors import KernelGymError

    cpu = all_profiles()["cpu-interpreter"]
    names, skipped = select_tasks(["triton-*softmax*", "triton-softmax", "KernelArena/triton-rmsnorm-v0"], None, cpu)
    assert names == ["triton-log-softmax", "triton-softmax", "triton-topk-softmax", "KernelArena/triton-rmsnorm-v0"]
    assert skipped == []
    names, skipped = select_tasks(["all"], None, cpu)
    assert "triton-rmsnorm" in names and not any(n.startswith("cuda-") for n in names)
    assert "triton-per-token-quant-fp8" not in names
    assert any(line.startswith("triton-per-token-quant-fp8: not run on cpu-interpreter") for line in skipped)
    assert any(line.startswith("cuda-gelu: not run on cpu-interpreter: it is a cuda task") for line in skipped)
    with pytest.raises(KernelGymError, match="matches no task"):
        select_tasks(["tritn-*"], None, cpu)


def test_run_several_tasks_and_policies_one_after_another(tmp_path, capsys, monkeypatch, require_bwrap):
    from rich.console import Console

    import kernelgym.cli as cli
    monkeypatch.setattr(cli, "console", Console(width=4000))  # wide: the table's cells stay on one line
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # the anthropic policy fails at once; its run still ends
    code = main(["run", "--task", "triton-softmax", "--task", "nope", "--task", "triton-silu-and-mul",
                 "--policy", "scripted", "--policy", "anthropic", "--policy", "scripted",
                 "--policy-config", '{"scripted": {"actions": []}}', "--run-dir", str(tmp_path), "--keep-going"])
    out = capsys.readouterr().out
    assert code == 2  # the runs of one task could not start; the others still ran
    # the key was found missing before the first episode; --keep-going ran the runs anyway
    assert "needs environment variable 'ANTHROPIC_API_KEY'" in out and "--keep-going: running anyway" in out
    assert "Unknown task 'nope'" in out
    dirs = sorted(p.name.split("-", 2)[2] for p in tmp_path.iterdir())  # <date>-<time>-<task>-<policy>
    assert dirs == ["triton-silu-and-mul-anthropic", "triton-silu-and-mul-scripted", "triton-softmax-anthropic",
                    "triton-softmax-scripted"]
    for d in tmp_path.iterdir():
        (result,) = json.loads((d / "results.json").read_text())
        assert result["reward"] == 120.0  # the unchanged baseline, graded however the policy ended
        assert bool(result.get("policy_error")) == d.name.endswith("anthropic")
    table = out[out.index("Runs"):]
    rows = [line for line in table.splitlines() if "triton-softmax" in line]
    assert len(rows) == 2 and any("scripted" in r for r in rows) and any("anthropic" in r for r in rows)
    assert "(not run: see its error above)" in table and "n/a (interpreter)" in table


def test_several_policies_take_their_configs_by_name(capsys):
    from kernelgym.cli import policy_configs

    assert policy_configs('{"actions": []}', ["scripted"]) == {"scripted": '{"actions": []}'}
    assert policy_configs('{"scripted": {"actions": []}}', ["scripted", "tuner"]) == {
        "scripted": '{"actions": []}', "tuner": None}
    assert main(["run", "--task", "triton-softmax", "--policy", "scripted", "--policy", "tuner",
                 "--policy-config", '{"actions": []}']) == 2
    assert "keyed by policy name" in capsys.readouterr().out


def test_a_negative_seed_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", "--task", "triton-softmax", "--seed", "-1"])
    assert stop.value.code == 2 and "must be 0 or more" in capsys.readouterr().err


@pytest.mark.parametrize("argv, expected", [
    (["run", "--task", "/nonexistent/task-folder"], "it looks like a task folder, and does not exist"),
    (["unseen", "/nonexistent/run"], "no such run directory"),
])
def test_a_missing_folder_is_named_as_missing(argv, expected, capsys):
    assert main(argv) == 2
    assert expected in capsys.readouterr().out


def test_sigterm_stops_a_local_run_as_ctrl_c_does(tmp_path, monkeypatch, capsys):
    """A SIGTERM mid-run (here: sent by the episode loop to its own process) stops `kernelgym run` as Ctrl-C does:
    the env closed, a line saying how to resume, exit 143 (128 + SIGTERM), not the default handler's death."""
    import os
    import signal

    import kernelgym.cli as cli

    def episodes(*args):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the run")

    monkeypatch.setattr(cli, "_run_episodes", episodes)
    before = signal.getsignal(signal.SIGTERM)
    assert main(["run", "--task", "triton-softmax", "--policy", "scripted", "--policy-config", '{"actions": []}',
                 "--episodes", "2", "--run-dir", str(tmp_path)]) == 143
    out = capsys.readouterr().out.replace("\n", "")
    (run_dir,) = tmp_path.iterdir()
    assert f"interrupted: 0 of 2 episodes finished and kept in {run_dir}; resume with `kernelgym run --resume " \
           f"{run_dir}`" in out and "stopped by SIGTERM" in out, out
    assert signal.getsignal(signal.SIGTERM) == before  # put back once the command is over
