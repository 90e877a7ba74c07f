"""kernelgym.integrations.verifiers loads as a verifiers 0.4 env: its taskset, tasks, tools and reward.

verifiers pins mcp==2.0.0 and openai<3 (the agents extra needs mcp>=2.3), so it lives in .venv-verifiers (made by
`bash .ci/setup`) and this runs in a subprocess: .venv's python with that venv's site-packages on PYTHONPATH.
Skipped only where .venv-verifiers is absent. The second test runs a whole rollout
(tests/integration_scripts/verifiers_rollout.py): verifiers' null harness against a scripted OpenAI-compatible
server on loopback, the tool server in its own process, the graded kernel in kernelgym's sandbox.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / ".venv-verifiers" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"

SCRIPT = """
import asyncio, json
from kernelgym.integrations.verifiers import load_environment, KernelArenaToolset, KernelArenaState
from verifiers.v1.utils.decorators import discover_decorated
env = load_environment(tasks=["triton-rmsnorm"], seeds=2, max_steps=6)
tasks = list(env.taskset)
(toolset,) = type(tasks[0]).toolsets(tasks[0].config)
print(json.dumps({"env": type(env).__name__, "taskset": type(env.taskset).__name__,
    "names": [t.data.name for t in tasks], "seeds": [t.data.seed for t in tasks],
    "prompt": tasks[0].data.prompt[:2000], "tools": sorted(f.__name__ for f in discover_decorated(toolset, "tool")),
    "rewards": [f.__name__ for f in tasks[0].hooks("reward")], "server_name": toolset.server_name}))
"""


@pytest.mark.skipif(not (SITE / "verifiers").is_dir(), reason=".venv-verifiers missing: run bash .ci/setup")
def test_verifiers_env_loads_kernelgym_tasks():
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(SITE)}, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["env"] == "SingleAgentEnv" and out["taskset"] == "KernelArenaTaskset"
    assert out["names"] == ["triton-rmsnorm#0", "triton-rmsnorm#1"] and out["seeds"] == [0, 1]
    assert "kernel.py" in out["prompt"]
    assert out["tools"] == ["bench", "edit_file", "profile", "read_file", "shell", "submit", "write_file"]
    assert out["rewards"] == ["arena_score"] and out["server_name"] == ""


@pytest.mark.skipif(not (SITE / "verifiers").is_dir(), reason=".venv-verifiers missing: run bash .ci/setup")
def test_verifiers_rollout_read_edit_submit_scores_120(tmp_path):
    # The CPU interpreter's best score: compiled (+20) and correct (+100), nothing timed.
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "integration_scripts" / "verifiers_rollout.py"),
                          str(tmp_path / "runs"), str(ROOT / ".venv-verifiers" / "bin" / "python")],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(SITE)}, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["errors"] == [] and out["stop"] == "episode_over", out
    assert out["requests"] == 3 and "submit" in out["tools"]
    assert "BLOCK_SIZE = 1024" in out["tool_results"][0]  # read_file's output reached the model
    assert out["state"]["steps"] == 3 and out["state"]["done"] is True
    assert out["reward"] == 120.0 and out["state"]["score"] == 120.0
    assert out["metrics"] == {"compiled": 1.0, "correct": 1.0}
    (kernel,) = (tmp_path / "runs").glob("episodes/*/workspace/kernel.py")
    assert "BLOCK_SIZE = 2048" in kernel.read_text()  # the edit went through the tool server to the env
