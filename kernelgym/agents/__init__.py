"""Coding-agent CLIs (Claude Code, Codex, Cursor's agent) as step-level kernelgym policies.

`bridge.MCPBridge` serves the env's actions as MCP tools; `launcher.CLIAgentPolicy` starts a CLI against it and
hands its tool calls out one `act()` at a time. docs/AGENT_CLIS.md says how each CLI is launched and contained.
"""
