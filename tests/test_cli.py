"""The main job end to end on the interpreter: `kernelgym run --task triton-rmsnorm --policy tuner`."""
import json
import subprocess
import sys

import pytest

from kernelgym.cli import main
from kernelgym.wrappers import TRAJECTORY_FORMAT


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "triton-rmsnorm" in out and "tuner" in out and "mi300x" in out


def test_run_tuner_end_to_end(tmp_path, require_bwrap):
    # A reduced grid keeps CI fast; the default grid is exercised on the GPU (benchmarks/results).
    overrides = json.dumps({"params": {"BLOCK_SIZE": [512], "NUM_WARPS": [2]}})
    proc = subprocess.run([sys.executable, "-m", "kernelgym.cli", "run", "--task", "triton-rmsnorm", "--policy", "tuner",
                           "--policy-config", overrides, "--run-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Result" in proc.stdout and "120.0" in proc.stdout
    (run_dir,) = tmp_path.iterdir()
    results = json.loads((run_dir / "results.json").read_text())
    assert results[0]["reward"] == 120.0 and results[0]["terminated"]
    lines = [json.loads(x) for x in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    assert lines[0]["event"] == "reset" and lines[-1]["event"] == "step" and lines[-1]["reward"] == 120.0
    assert all(x["format"] == TRAJECTORY_FORMAT for x in lines)
    kinds = [x["action"]["kind"] for x in lines[1:]]
    assert kinds[0] == "read_file" and kinds.count("shell") == 3 and kinds[-1] == "submit"


def test_unknown_policy_is_clear_error(capsys):
    assert main(["run", "--policy", "tunr"]) == 2
    assert "Did you mean 'tuner'" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["run", "--task", "nope"]])
def test_unknown_task_is_clear_error(argv, capsys):
    assert main(argv) == 2
    assert "Unknown task 'nope'" in capsys.readouterr().out
