"""Helper of the agent-CLI attack files: the real Claude Code, driven by the fake Anthropic API, with its own Bash tool
switched back on, as if the flags that switch it off (``--tools ""``, ``--allowedTools mcp__kernelgym``) had failed.
What the model's Bash commands print comes back in the next request to the fake server, which keeps it.

`bash_attempts(tmp_path, commands)` runs one episode: the commands, one Bash call each, then kernelgym's submit;
it returns the output of each command (as the CLI sent it back to the model) and the run's folder.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kernelgym.agents.launcher import locate_binary
from kernelgym.env import KernelArenaEnv
from kernelgym.policy import load_policy
from kernelgym.rollout import rollout
from kernelgym.wrappers import TrajectoryRecorder
from tests.fakes.cli_servers import FakeAnthropic

FAKE_KEY = "sk-fake-kernelgym-attack-key-0123456789"


def require_claude() -> None:
    """A missing Claude Code fails in CI (where .ci/setup installs it), and skips elsewhere."""
    if locate_binary("claude") is None:
        message = "claude is not installed: run `bash .ci/setup --agents`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def _with_bash(command):
    """A ClaudeCodePolicy.command whose flags give the CLI its own Bash tool (the second line, failed)."""
    def patched(binary, prompt, mcp_url, home, token):
        argv, stdin = command(binary, prompt, mcp_url, home, token)
        argv[argv.index("--tools") + 1] = "Bash"
        argv[argv.index("--allowedTools") + 1] = "mcp__kernelgym,Bash"
        return argv, stdin
    return patched


def tool_results(request: dict) -> list[str]:
    """The text of every tool result in one logged request to the fake server, in order."""
    out = []
    for message in request["body"].get("messages", []):
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                content = block.get("content")
                out.append(content if isinstance(content, str) else
                           "".join(c.get("text", "") for c in content or [] if isinstance(c, dict)))
    return out


def bash_attempts(tmp_path: Path, monkeypatch, commands: list[str], **config) -> tuple[list[str], Path, dict]:
    """Run the commands through the CLI's own Bash tool in one episode (then submit); return their outputs, the
    run folder and the rollout's result."""
    require_claude()
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    script = [("Bash", {"command": c, "description": "step"}) for c in commands] + [("submit", {})]
    run = tmp_path / "run"
    with FakeAnthropic(script) as fake:
        policy = load_policy("claude-code", base_url=fake.base_url, timeout_s=120, **config)
        policy.command = _with_bash(policy.command)
        env = TrajectoryRecorder(KernelArenaEnv("triton-rmsnorm", run_dir=run, hardware="cpu-interpreter"),
                                 run / "trajectories.jsonl")
        try:
            result = rollout(env, policy, seed=0)
        finally:
            env.close()
        requests = fake.tool_requests()
    offered = {t["name"] for t in requests[0]["body"]["tools"]}
    assert "Bash" in offered, f"the CLI did not offer its Bash tool: {sorted(offered)}"
    outputs = tool_results(requests[-1])[:len(commands)]
    assert len(outputs) == len(commands), json.dumps(requests[-1]["body"].get("messages"))[:2000]
    return outputs, run, result
