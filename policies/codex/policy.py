"""`codex`: OpenAI's Codex CLI (``codex exec``) as a step-level policy, acting only through kernelgym's MCP tools (see
kernelgym.agents.launcher and docs/AGENT_CLIS.md).

Its own tools are switched off with ``--disable shell_tool`` (no shell, so no apply_patch through it either),
``--disable view_image``, ``--disable multi_agent``, ``--disable goals``, ``-c web_search="disabled"`` and
``-c tools.experimental_request_user_input.enabled=false``; its own sandbox is ``read-only`` besides. Only the
kernelgym MCP server is configured (``--ignore-user-config``: no config.toml is read), with its tools approved
(``default_tools_approval_mode="approve"``, ``approval_policy="never"``). What stays on cannot touch the task: the
MCP resource tools (list_mcp_resources, list_mcp_resource_templates, read_mcp_resource) talk only to kernelgym's
server, which has no resources. The MCP server's bearer token goes in the environment variable
``KERNELGYM_MCP_TOKEN``, which the config names (``mcp_servers.kernelgym.bearer_token_env_var``): it is not on the
command line, which any local process can read (the URL is, and is of no use without the token). The model is reached through a model provider defined on the command line (base URL,
key variable, Responses API). The transcript is its ``--json`` JSONL stream.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelgym.agents.launcher import MCP_TOKEN_ENV, ApiTrouble, CLIAgentConfig, CLIAgentPolicy
from kernelgym.usage import StepUsage, token_count

#: What `kernelgym list` shows this policy needs.
REQUIRES = ["binary:codex", "env:OPENAI_API_KEY", "python:mcp"]


@dataclass
class CodexConfig(CLIAgentConfig):
    """Codex's settings (config.yaml holds the defaults; every field is described in CLIAgentConfig)."""

    binary: str = "codex"
    """The CLI's executable: a path, or a name looked up in .agents/node_modules/.bin, then on PATH."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the OpenAI API key (passed to the CLI only)."""
    base_url: str = "https://api.openai.com/v1"
    """The Responses API's base URL (OpenAI's, a proxy, or a local server)."""


def _toml(value: Any) -> str:
    """`value` as a TOML literal for ``-c key=value`` (JSON strings are valid TOML basic strings)."""
    return json.dumps(value)


class CodexPolicy(CLIAgentPolicy):
    """`codex exec` on the task prompt, one MCP tool call per env step."""

    name = "codex"
    install_hint = ("Install it with `bash .ci/setup --agents` (npm: @openai/codex@0.171.0 into .agents/), or "
                    "`npm install -g @openai/codex`, or set `binary` to its path.")

    def command(self, binary: str, prompt: str, mcp_url: str, home: Path, token: str) -> tuple[list[str], str | None]:
        """``codex exec`` with only the kernelgym MCP server; the token is read from $KERNELGYM_MCP_TOKEN (see
        `child_env`)."""
        provider = {"name": "kernelgym", "base_url": self.config.base_url, "env_key": self.config.api_key_env,
                    "wire_api": "responses"}
        settings = {"model_provider": "kernelgym",
                    **{f"model_providers.kernelgym.{k}": v for k, v in provider.items()},
                    "mcp_servers.kernelgym.url": mcp_url,
                    "mcp_servers.kernelgym.bearer_token_env_var": MCP_TOKEN_ENV,
                    "mcp_servers.kernelgym.default_tools_approval_mode": "approve",
                    "approval_policy": "never", "web_search": "disabled",
                    "tools.experimental_request_user_input.enabled": False,
                    "check_for_update_on_startup": False}
        if self.config.effort:
            settings["model_reasoning_effort"] = self.config.effort
        argv = [binary, "exec", "--json", "--skip-git-repo-check", "--ephemeral", "--ignore-user-config",
                "--ignore-rules", "--sandbox", "read-only", "--cd", str(home), "--color", "never"]
        for feature in ("shell_tool", "view_image", "multi_agent", "goals"):
            argv += ["--disable", feature]
        for key, value in settings.items():
            argv += ["-c", f"{key}={_toml(value)}"]
        if self.config.model:
            argv += ["--model", self.config.model]
        return [*argv, "-"], prompt  # "-": the prompt is read from stdin

    def child_env(self, home: Path, key: str) -> dict[str, str]:
        env = super().child_env(home, key)
        env["CODEX_HOME"] = str(home / ".codex")
        env[MCP_TOKEN_ENV] = self._mcp_token  # named by mcp_servers.kernelgym.bearer_token_env_var
        (home / ".codex").mkdir(mode=0o700, exist_ok=True)
        return env

    def tool_calls_in(self, event: dict[str, Any]) -> int:
        """1 for an ``item.started`` event of an MCP tool call."""
        item = event.get("item") if event.get("type") == "item.started" else None
        return int(isinstance(item, dict) and item.get("type") == "mcp_tool_call")

    def api_trouble(self, event: dict[str, Any]) -> ApiTrouble | None:
        """Codex's ``--json`` stream reports each reconnect as ``{"type": "error", "message": "Reconnecting... ..."}``
        (checked against 0.171.0 with a closed port: "Reconnecting... waiting for network (Connection failed: error
        sending request)") and a failed turn as ``{"type": "turn.failed", "error": {"message"}}``. A reconnect
        after a connection failure or a refused key is one that waiting does not fix."""
        kind = event.get("type")
        if kind == "error":
            message = str(event.get("message", ""))
            lowered = message.lower()
            retry = "reconnecting" in lowered
            unreachable = any(s in lowered for s in ("connection failed", "waiting for network", "error sending "
                                                     "request", "401", "unauthorized", "403", "forbidden"))
            return ApiTrouble(message or "error", retry=retry, unreachable=unreachable)
        if kind == "turn.failed":
            error = event.get("error")
            return ApiTrouble(f"turn failed: {error.get('message') if isinstance(error, dict) else error}")
        return None

    def parse_event(self, event: dict[str, Any]) -> StepUsage | None:
        """Usage of a ``turn.completed`` event. Codex reports usage per turn (the whole exec), so its tokens land
        on the step that ends the session. OpenAI counts cached tokens inside input_tokens; they are split out."""
        u = event.get("usage") if event.get("type") == "turn.completed" else None
        if not isinstance(u, dict):
            return None
        cached = token_count(u.get("cached_input_tokens"))
        written = token_count(u.get("cache_write_input_tokens"))
        return StepUsage(input_tokens=max(0, token_count(u.get("input_tokens")) - cached - written),
                         output_tokens=token_count(u.get("output_tokens")), cached_tokens=cached,
                         cache_write_tokens=written, cost_usd=0.0, api_calls=0, model=self.config.model or None)
