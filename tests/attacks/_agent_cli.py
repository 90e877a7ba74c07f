"""Helper of the agent-CLI attack files: the real Claude Code or Codex, driven by its fake model API
(tests/fakes/cli_servers.py), with its own shell tool switched back on, as if the flags that switch it off had
failed (Claude Code: ``--tools ""``, ``--allowedTools mcp__kernelgym``; Codex: ``--disable shell_tool``, and its own
``--sandbox read-only`` set to ``danger-full-access``, so that Codex's own sandbox is no line of defence either).
What the model's shell commands print comes back in the next request to the fake server, which keeps it.

`shell_attempts(tmp_path, monkeypatch, commands, cli=...)` runs one episode: the commands, one shell call each, then
kernelgym's submit; it returns the output of each command (as the CLI sent it back to the model), the run's folder
and the rollout's result. `CLIS` is what the attack files are parametrized over.
"""
from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from kernelgym.agents.launcher import locate_binary
from kernelgym.env import KernelArenaEnv
from kernelgym.policy import load_policy
from kernelgym.rollout import rollout
from kernelgym.wrappers import TrajectoryRecorder
from tests.fakes.cli_servers import FakeAnthropic, FakeOpenAI

FAKE_KEY = "sk-fake-kernelgym-attack-key-0123456789"
#: The policies the attacks run through, and the CLI's executable for each.
CLIS = {"claude-code": "claude", "codex": "codex"}
#: A file or folder each CLI's launcher puts in the CLI's private $HOME (the honest twins look for it).
OWN_FILE = {"claude-code": "kernelgym-mcp.json", "codex": ".codex"}

# The port of kernelgym's MCP server as the CLI was given it: Claude Code's config file in its $HOME, or Codex's
# command line (-c mcp_servers.kernelgym.url="..."), read from /proc in the sandbox's own pid namespace.
_MCP_PORT = r'''
import glob, json, os, re, urllib.parse
try:
    url = json.load(open(os.environ["HOME"] + "/kernelgym-mcp.json"))["mcpServers"]["kernelgym"]["url"]
except OSError:
    url = ""
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            found = re.search(r'mcp_servers\.kernelgym\.url="([^"]+)"', open(path, "rb").read().decode("latin-1"))
        except OSError:
            continue
        if found:
            url = found.group(1)
            break
print(urllib.parse.urlsplit(url).port)
'''


def python_command(code: str, *args: str) -> str:
    """A shell command that runs the Python `code` with `args` (the code base64-encoded: no quoting to get wrong)."""
    encoded = base64.b64encode(code.encode()).decode()
    return " ".join([f'python3 -c "$(echo {encoded} | base64 -d)"', *args])


#: A shell expression that prints the MCP server's port (for the honest twins that reach it).
MCP_PORT = f"$({python_command(_MCP_PORT)})"


def require_cli(cli: str) -> None:
    """A missing CLI fails in CI (where .ci/setup installs it), and skips elsewhere."""
    if locate_binary(CLIS[cli]) is None:
        message = f"{CLIS[cli]} is not installed: run `bash .ci/setup --agents`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def _claude_with_bash(command):
    """A ClaudeCodePolicy.command whose flags give the CLI its own Bash tool (the second line, failed)."""
    def patched(binary, prompt, mcp_url, home, token):
        argv, stdin = command(binary, prompt, mcp_url, home, token)
        argv[argv.index("--tools") + 1] = "Bash"
        argv[argv.index("--allowedTools") + 1] = "mcp__kernelgym,Bash"
        return argv, stdin
    return patched


def _codex_with_shell(command):
    """A CodexPolicy.command with its shell tool on and Codex's own sandbox off (the second line, failed)."""
    def patched(binary, prompt, mcp_url, home, token):
        argv, stdin = command(binary, prompt, mcp_url, home, token)
        at = argv.index("shell_tool")
        del argv[at - 1:at + 1]  # "--disable", "shell_tool"
        argv[argv.index("--sandbox") + 1] = "danger-full-access"
        return argv, stdin
    return patched


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def tool_results(request: dict) -> list[str]:
    """The text of every tool result in one logged request to a fake server (Anthropic's tool_result blocks,
    OpenAI's function_call_output items), in order."""
    out = []
    for item in request["body"].get("input") or []:  # OpenAI Responses
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            out.append(_text(item.get("output")))
    for message in request["body"].get("messages", []):  # Anthropic Messages
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out.append(_text(block.get("content")))
    return out


def shell_attempts(tmp_path: Path, monkeypatch, commands: list[str], cli: str = "claude-code",
                   **config) -> tuple[list[str], Path, dict]:
    """Run the commands through the CLI's own shell tool in one episode (then submit); return their outputs, the
    run folder and the rollout's result."""
    require_cli(cli)
    run = tmp_path / "run"
    if cli == "claude-code":
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        tool, server = "Bash", FakeAnthropic([("Bash", {"command": c, "description": "step"}) for c in commands]
                                             + [("submit", {})])
        config = {"base_url": server.base_url, **config}
    else:
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        tool, server = "exec_command", FakeOpenAI([("exec_command", {"cmd": c}) for c in commands]
                                                  + [("submit", {})])
        config = {"base_url": server.base_url + "/v1", "model": "gpt-5-codex", **config}
    with server as fake:
        policy = load_policy(cli, timeout_s=120, **config)
        policy.command = (_claude_with_bash if cli == "claude-code" else _codex_with_shell)(policy.command)
        env = TrajectoryRecorder(KernelArenaEnv("triton-rmsnorm", run_dir=run, hardware="cpu-interpreter"),
                                 run / "trajectories.jsonl")
        try:
            result = rollout(env, policy, seed=0)
        finally:
            env.close()
        requests = fake.tool_requests()
    offered = {t.get("name") for t in requests[0]["body"]["tools"]}
    assert tool in offered, f"the CLI did not offer its shell tool: {sorted(offered)}"
    outputs = tool_results(requests[-1])[:len(commands)]
    assert len(outputs) == len(commands), json.dumps(requests[-1]["body"])[:2000]
    return outputs, run, result
