"""The examples run as documented, reduced, on Triton's CPU interpreter (nothing timed: a correct kernel scores 120)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"


def run_example(name, *args, timeout=300):
    """Run examples/`name` with `args` in a subprocess; returns its stdout (fails the test on a non-zero exit)."""
    out = subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)], capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


@pytest.mark.timeout(300)
def test_multi_task_loop(tmp_path, require_bwrap):
    stdout = run_example("multi_task_loop.py", "--tasks", "triton-rmsnorm", "triton-softmax", "--seeds", "0", "1",
                         "--steps", "1", "--run-dir", tmp_path)
    rows = re.findall(r"(?m)^(triton-\S+)\s+(\d)\s+\S+\s+(\d+\.\d)\s+True\s+True\s+cpu-interpreter\s*$", stdout)
    assert sorted(rows) == [(t, s, "120.0") for t in ("triton-rmsnorm", "triton-softmax") for s in "01"], stdout
    assert "mean reward 120.0 over 4 episodes" in stdout
    assert len(list(tmp_path.glob("episodes/*/grade.json"))) == 4


@pytest.mark.timeout(300)
def test_learning_loop_reward_rises(tmp_path, require_bwrap):
    png = tmp_path / "curve.png"
    stdout = run_example("learning_loop.py", "--episodes", 8, "--seed", 1, "--out", png, "--run-dir", tmp_path / "run")
    # On the interpreter nothing is timed: every episode's speedup is None, and so are the quarters' means.
    rewards = [float(r) for r in re.findall(r"reward\s+(\d+\.\d)\s+speedup None\s+p\(correct", stdout)]
    assert len(rewards) == 8 and set(rewards) <= {0.0, 20.0, 120.0}, stdout
    assert "mean speedup first 2: n/a (none measured)  last 2: n/a (none measured)" in stdout
    assert min(rewards) < 120.0  # a broken arm was tried and scored less
    first, last = (float(x) for x in re.search(r"mean reward first 2: (\S+)\s+last 2: (\S+)", stdout).groups())
    assert last > first and (first, last) == (sum(rewards[:2]) / 2, sum(rewards[-2:]) / 2)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.timeout(300)
def test_offline_dataset(tmp_path, require_bwrap):
    stdout = run_example("offline_dataset.py", "--episodes", 2, "--out", tmp_path)
    assert "rewards [120.0, 20.0]" in stdout and "read back 2 whole episodes" in stdout
    assert "parquet rewards of the last steps: [120.0, 20.0]" in stdout
    assert "2 episodes, 6 steps" in stdout  # the Minari dataset loaded back
    assert re.findall(r"final reward (\d+\.\d)", stdout) == ["120.0", "20.0"]
    assert (tmp_path / "steps.parquet").is_file() and (tmp_path / "minari").is_dir()


@pytest.mark.timeout(400)
def test_unseen_eval_replays_a_finished_run(tmp_path, require_bwrap):
    # The finished run is quickstart's one episode; the online path (UnseenConfigEval during episodes) takes minutes
    # more on the interpreter and its wrapper is tested in tests/test_unseen.py.
    assert "reward 120.0" in run_example("quickstart.py", "--run-dir", tmp_path)
    stdout = run_example("unseen_eval.py", "--replay-only", tmp_path, timeout=360)
    assert re.search(r"replayed 1 episodes of .*: both_pass 1; conditional correctness 1.0", stdout), stdout
    assert (tmp_path / "unseen_summary.json").is_file()


@pytest.mark.timeout(300)
def test_ray_rollouts(tmp_path, require_bwrap):
    stdout = run_example("ray_rollouts.py", "--envs", 2, "--episodes", 1, "--num-cpus", 2, "--run-dir", tmp_path)
    ends = re.findall(r"(?m)^env (\d) \((triton-\S+)\) episode 1: reward (\d+\.\d), (\S+)$", stdout)
    assert sorted(ends) == [("0", "triton-rmsnorm", "120.0", "correct_not_timed"),
                            ("1", "triton-softmax", "120.0", "correct_not_timed")], stdout
    assert "mean reward 120.0 over 2 episodes on 2 actors" in stdout
    assert len(list(tmp_path.glob("episodes/*/grade.json"))) == 2
