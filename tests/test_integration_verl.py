"""verl's agent loop (kernelgym.integrations.verl) plays a triton-rmsnorm episode on the CPU interpreter.

verl is not importable from .venv (it ships a top-level `tests` package and pulls ray and transformers), so the
episode runs in a subprocess: .venv's python with .venv-verl's site-packages (made by `bash .ci/setup`) on
PYTHONPATH, so the graded kernel still runs with .venv's torch and triton. Skipped only where .venv-verl is absent.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / ".venv-verl" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


@pytest.mark.skipif(not (SITE / "verl").is_dir(), reason=".venv-verl missing: run bash .ci/setup")
def test_verl_agent_loop_scores_an_episode(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "integration_scripts" / "verl_episode.py"),
                          str(tmp_path / "runs")], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(SITE)}, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["registered"] == {"_target_": "kernelgym.integrations.verl.KernelGymAgentLoop"}
    assert out["reward"] == 120.0 and out["extra"]["score"] == 120.0 and out["extra"]["correct"] is True
    assert out["extra"]["actions"] == ["read_file", "edit_file", "submit"] and out["extra"]["submitted"] is True
    assert out["calls"] == 4 and out["num_turns"] == 9 and out["prefix_ok"]
    assert out["len_response"] == out["len_mask"]
    # mask 1: exactly the four scripted replies; mask 0: the nudge after the reply with no tool call and the
    # observations (the kernel file read back, the edit's confirmation).
    assert out["generated"].count("<tool_call>") == 3 and out["generated"].startswith("Let me look.")
    assert "no well-formed tool call" in out["observed"] and "BLOCK_SIZE = 1024" in out["observed"]
    assert "<tool_call>" not in out["observed"].split("e.g.")[-1].split("</tool_call>", 1)[-1]
    assert "RMSNorm" in out["prompt"] and "read_file" not in out["generated"].split("<tool_call>")[0]


def test_example_agent_loop_config_names_the_loop():
    import yaml

    (entry,) = yaml.safe_load((ROOT / "examples" / "verl_agent_loop" / "agent_loops.yaml").read_text())
    assert entry == {"name": "kernelgym_agent", "_target_": "kernelgym.integrations.verl.KernelGymAgentLoop"}
    module, _, name = entry["_target_"].rpartition(".")
    assert f"class {name}(AgentLoopBase)" in (ROOT / (module.replace(".", "/") + ".py")).read_text()
    assert "agent_loops.yaml" in (ROOT / "examples" / "verl_agent_loop" / "train.sh").read_text()
