"""`cursor-agent`: Cursor's agent CLI (``cursor-agent -p``) as a step-level policy, acting only through kernelgym's MCP
tools (see kernelgym.agents.launcher and docs/AGENT_CLIS.md).

Cursor's CLI has no flag that removes its own tools. Its documented permission rules deny them instead: the empty
working directory gets ``.cursor/cli.json`` (and $HOME ``.cursor/cli-config.json``) denying ``Shell(*)``,
``Read(**)``, ``Write(**)`` and ``WebFetch(*)`` and allowing ``Mcp(kernelgym:*)``, and ``--force`` is not passed, so
nothing runs unapproved. What those rules might still let through meets an empty directory with a clean environment:
nothing of the task is there. The MCP server is configured in that directory's ``.cursor/mcp.json`` (0600, with the
server's bearer token in ``headers``; the directory is private, 0700) and approved with ``--approve-mcps``. The key goes in ``CURSOR_API_KEY`` (not on the command line). The transcript is its
``--output-format stream-json`` stream.

The real CLI is in no registry reachable where this was written: its launcher is tested with a stand-in executable
(tests/fakes/cursor_agent_standin.py) that follows the documented flags, files and stream-json events.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelgym.agents.launcher import ApiTrouble, CLIAgentConfig, CLIAgentPolicy, write_private
from kernelgym.errors import PolicyConfigError
from kernelgym.usage import StepUsage, token_count

#: What `kernelgym list` shows this policy needs.
REQUIRES = ["binary:cursor-agent", "env:CURSOR_API_KEY", "python:mcp"]

#: Cursor CLI permission rules: only kernelgym's MCP tools; the CLI's own shell, file and web tools denied.
PERMISSIONS = {"allow": ["Mcp(kernelgym:*)"], "deny": ["Shell(*)", "Read(**)", "Write(**)", "WebFetch(*)"]}


@dataclass
class CursorAgentConfig(CLIAgentConfig):
    """Cursor agent's settings (config.yaml holds the defaults; every field is described in CLIAgentConfig)."""

    binary: str = "cursor-agent"
    """The CLI's executable: a path, or a name looked up in .agents/node_modules/.bin, then on PATH."""
    api_key_env: str = "CURSOR_API_KEY"
    """Name of the environment variable holding the Cursor API key (passed to the CLI as CURSOR_API_KEY)."""
    network_allow: list[str] = field(default_factory=lambda: ["*.cursor.sh:443"])
    """The hosts the CLI's sandbox reaches: Cursor's service (its documentation lists api2/api3/api4.cursor.sh and
    others under cursor.sh; not checked against a real CLI here)."""


class CursorAgentPolicy(CLIAgentPolicy):
    """`cursor-agent -p` on the task prompt, one MCP tool call per env step."""

    name = "cursor-agent"
    install_hint = ("Install Cursor's CLI as Cursor documents it (it is not on npm), so that `cursor-agent` is on "
                    "PATH, or set `binary` to its path.")
    fixed_env = {"NO_UPDATE_NOTIFIER": "1"}
    #: CLIAgentConfig fields this CLI has no way to honour, and why: setting one is an error, not a silent no-op.
    UNSUPPORTED = {"effort": "the CLI has no reasoning-effort flag (pick a model variant with `model` instead)",
                   "base_url": "the CLI talks to Cursor's service only; it has no setting for another API"}

    def __init__(self, config: CursorAgentConfig):
        """Refuse the shared CLI fields Cursor's CLI cannot use (`UNSUPPORTED`), so a run never looks configured
        when it is not.

        Raises:
            PolicyConfigError: `effort` or `base_url` is set.
        """
        for name, why in self.UNSUPPORTED.items():
            if getattr(config, name):
                raise PolicyConfigError(f"cursor-agent: config field {name!r} is not supported ({why}); "
                                        f"leave it empty")
        super().__init__(config)

    def command(self, binary: str, prompt: str, mcp_url: str, home: Path, token: str) -> tuple[list[str], str | None]:
        """``cursor-agent -p`` with the MCP server (URL and bearer token) and permission rules in ``.cursor/``."""
        cursor = home / ".cursor"
        cursor.mkdir(mode=0o700, exist_ok=True)
        write_private(cursor / "mcp.json", json.dumps({"mcpServers": {"kernelgym": {
            "url": mcp_url, "headers": {"Authorization": f"Bearer {token}"}}}}))
        write_private(cursor / "cli.json", json.dumps({"permissions": PERMISSIONS}))
        write_private(cursor / "cli-config.json", json.dumps({"version": 1, "permissions": PERMISSIONS}))
        argv = [binary, "-p", "--output-format", "stream-json", "--approve-mcps", "--trust", "--workspace", str(home)]
        if self.config.model:
            argv += ["--model", self.config.model]
        return [*argv, prompt], None

    def child_env(self, home: Path, key: str) -> dict[str, str]:
        env = super().child_env(home, key)
        if self.config.api_key_env and self.config.api_key_env != "CURSOR_API_KEY":
            env["CURSOR_API_KEY"] = env.pop(self.config.api_key_env)
        return env

    def tool_calls_in(self, event: dict[str, Any]) -> int:
        """1 for a ``tool_call`` event of subtype ``started``."""
        return int(event.get("type") == "tool_call" and event.get("subtype") == "started")

    def api_trouble(self, event: dict[str, Any]) -> ApiTrouble | None:
        """A ``result`` event with ``is_error`` (Cursor documents no retry events, so none are counted)."""
        if event.get("type") == "result" and event.get("is_error"):
            return ApiTrouble(f"session failed: {event.get('result') or event.get('error') or event.get('subtype')}")
        return None

    def parse_event(self, event: dict[str, Any]) -> StepUsage | None:
        """Usage of a ``result`` event, where the CLI reports one (camelCase or snake_case keys); None otherwise.
        Cursor reports usage per session, so its tokens land on the step that ends it."""
        u = event.get("usage") if event.get("type") == "result" else None
        if not isinstance(u, dict):
            return None

        def n(*keys: str) -> int:
            return token_count(next((u[k] for k in keys if k in u), 0))
        return StepUsage(input_tokens=n("inputTokens", "input_tokens"), output_tokens=n("outputTokens", "output_tokens"),
                         cached_tokens=n("cacheReadTokens", "cache_read_tokens", "cached_tokens"),
                         cache_write_tokens=n("cacheWriteTokens", "cache_write_tokens"), cost_usd=0.0,
                         model=self.config.model or None)
