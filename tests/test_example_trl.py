"""examples/train_grpo_trl.py runs a reduced GRPO run (one optimizer step, the tiny model built in the script) on
the CPU interpreter and prints the env's reward as the trainer logged it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_grpo_trl.py"


def test_train_grpo_trl_reduced_run(tmp_path):
    out = subprocess.run([sys.executable, str(EXAMPLE), "--max-steps", "1", "--seeds", "1",
                          "--run-dir", str(tmp_path / "runs"), "--output-dir", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    # the untouched baseline (the random model calls no tool) compiles and is correct: 120 on the interpreter
    assert "step 1: reward 120.0 (kernelgym 120.0)" in out.stdout, out.stdout[-2000:]
    assert len(list((tmp_path / "runs" / "episodes").glob("*/grade.json"))) == 2  # one graded episode per rollout
