"""`claude-code`: Anthropic's Claude Code CLI (``claude -p``) as a step-level policy, acting only through kernelgym's
MCP tools (see kernelgym.agents.launcher and docs/AGENT_CLIS.md).

Its own tools are switched off with ``--tools ""`` (no built-in tool at all), only the kernelgym MCP server is
loaded (``--mcp-config <file>`` with ``--strict-mcp-config``; the file, 0600 in the CLI's private 0700 home, holds
the server's URL and its bearer token, so neither is on the command line), only its tools are allowed (``--allowedTools
mcp__kernelgym``, ``--permission-mode dontAsk`` refuses anything else), and ``--bare`` skips hooks, plugins,
CLAUDE.md discovery and keychain reads. The transcript is its ``--output-format stream-json --verbose`` stream.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelgym.agents.launcher import ApiTrouble, CLIAgentConfig, CLIAgentPolicy, write_private
from kernelgym.usage import StepUsage, token_count

#: What `kernelgym list` shows this policy needs.
REQUIRES = ["binary:claude", "env:ANTHROPIC_API_KEY", "python:mcp"]


@dataclass
class ClaudeCodeConfig(CLIAgentConfig):
    """Claude Code's settings (config.yaml holds the defaults; every field is described in CLIAgentConfig)."""

    binary: str = "claude"
    """The CLI's executable: a path, or a name looked up in .agents/node_modules/.bin, then on PATH."""
    api_key_env: str = "ANTHROPIC_API_KEY"
    """Name of the environment variable holding the Anthropic API key (passed to the CLI only)."""


class ClaudeCodePolicy(CLIAgentPolicy):
    """Claude Code in print mode on the task prompt, one MCP tool call per env step."""

    name = "claude-code"
    install_hint = ("Install it with `bash .ci/setup --agents` (npm: @anthropic-ai/claude-code@2.1.332 into "
                    ".agents/), or `npm install -g @anthropic-ai/claude-code`, or set `binary` to its path.")
    fixed_env = {"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
                 "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_BUG_COMMAND": "1"}
    #: The API the CLI's sandbox reaches when `base_url` is empty (kernelgym.agents.confine).
    default_api_url = "https://api.anthropic.com"

    def __init__(self, config: ClaudeCodeConfig):
        super().__init__(config)
        self._seen_messages: set[str] = set()

    def command(self, binary: str, prompt: str, mcp_url: str, home: Path, token: str) -> tuple[list[str], str | None]:
        """``claude -p`` with only the kernelgym MCP server, configured in ``<home>/kernelgym-mcp.json`` (0600)."""
        mcp = {"mcpServers": {"kernelgym": {"type": "http", "url": mcp_url,
                                            "headers": {"Authorization": f"Bearer {token}"}}}}
        config_file = home / "kernelgym-mcp.json"
        write_private(config_file, json.dumps(mcp))
        argv = [binary, "-p", "--output-format", "stream-json", "--verbose", "--bare", "--tools", "",
                "--mcp-config", str(config_file), "--strict-mcp-config", "--allowedTools", "mcp__kernelgym",
                "--permission-mode", "dontAsk", "--disable-slash-commands", "--no-session-persistence"]
        if self.config.model:
            argv += ["--model", self.config.model]
        if self.config.effort:
            argv += ["--effort", self.config.effort]
        self._seen_messages = set()
        return argv, prompt  # the prompt goes on stdin: print mode reads it there

    def child_env(self, home: Path, key: str) -> dict[str, str]:
        env = super().child_env(home, key)
        env["CLAUDE_CONFIG_DIR"] = str(home / ".claude")
        if self.config.base_url:
            env["ANTHROPIC_BASE_URL"] = self.config.base_url
        return env

    def tool_calls_in(self, event: dict[str, Any]) -> int:
        """The tool_use blocks of an ``assistant`` event."""
        message = event.get("message") if event.get("type") == "assistant" else None
        content = message.get("content") if isinstance(message, dict) else None
        return sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_use") \
            if isinstance(content, list) else 0

    def api_trouble(self, event: dict[str, Any]) -> ApiTrouble | None:
        """Claude Code's stream-json reports each API retry as ``{"type": "system", "subtype": "api_retry",
        "attempt", "max_retries", "retry_delay_ms", "error_status", "error"}`` (checked against 2.1.332 with a
        closed port: ``error_status`` null, ``error`` "unknown"), and a failed session as a ``result`` event with
        ``is_error``. A retry with no HTTP status (no connection) or 401/403/404 is one that waiting does not fix."""
        if event.get("type") == "system" and event.get("subtype") == "api_retry":
            status = event.get("error_status")
            what = "no connection" if status is None else f"HTTP {status}"
            return ApiTrouble(f"API retry {event.get('attempt')}/{event.get('max_retries')}: {what} "
                              f"({event.get('error')})", retry=True,
                              unreachable=status is None or status in (401, 403, 404))
        if event.get("type") == "result" and event.get("is_error"):
            detail = event.get("result") or event.get("error") or event.get("subtype")
            return ApiTrouble(f"session failed: {detail}")
        return None

    def parse_totals(self, event: dict[str, Any]) -> StepUsage | None:
        """The ``result`` event's usage: the session's totals (assistant events carry the output count as it was
        when the reply's first block was complete, so the totals correct it)."""
        u = event.get("usage") if event.get("type") == "result" else None
        return _usage(u) if isinstance(u, dict) else None

    def parse_event(self, event: dict[str, Any]) -> StepUsage | None:
        """Usage of an ``assistant`` event (one API reply; a reply split over several events counts once)."""
        message = event.get("message") if event.get("type") == "assistant" else None
        if not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
            return None
        message_id = json.dumps(message.get("id"), sort_keys=True, default=str)  # hashable whatever its type
        if message_id in self._seen_messages:
            return None
        self._seen_messages.add(message_id)
        return _usage(message["usage"], api_calls=1, model=message.get("model"))


def _usage(u: dict[str, Any], api_calls: int = 0, model: str | None = None) -> StepUsage:
    """A StepUsage from an Anthropic usage dict (cache reads and writes are counted apart from input_tokens)."""
    return StepUsage(input_tokens=token_count(u.get("input_tokens")), output_tokens=token_count(u.get("output_tokens")),
                     cached_tokens=token_count(u.get("cache_read_input_tokens")),
                     cache_write_tokens=token_count(u.get("cache_creation_input_tokens")), cost_usd=0.0,
                     api_calls=api_calls, model=model if isinstance(model, str) else None)
