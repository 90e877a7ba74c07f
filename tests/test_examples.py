"""The examples run as documented."""
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.mark.timeout(600)
def test_rollout_with_unseen_eval_example(tmp_path, require_bwrap):
    out = subprocess.run([sys.executable, str(EXAMPLES / "rollout_with_unseen_eval.py"), "--episodes", "1",
                          "--run-dir", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "reward 120.0" in out.stdout and "unseen: both_pass" in out.stdout
    assert (tmp_path / "trajectories.jsonl").is_file()
