"""A stand-in for Cursor's agent CLI (``cursor-agent``), which is in no registry reachable here.

It behaves as Cursor documents its CLI in print mode: it takes ``-p/--print``, ``--output-format
text|json|stream-json``, ``--model``, ``--workspace``, ``--approve-mcps``, ``--trust``, ``-f/--force``, ``--api-key``
and the prompt as its one positional argument, and refuses other flags; it needs ``CURSOR_API_KEY`` (or
``--api-key``); it loads MCP servers from ``<workspace>/.cursor/mcp.json`` and refuses to use them without
``--approve-mcps``, and sends each server's ``headers`` (the bearer token) with its requests; it reads ``<workspace>/.cursor/cli.json`` permissions and refuses a call they deny; and it writes
stream-json events (``system``/init, ``user``, ``assistant``, ``tool_call`` started/completed, ``result``).

Instead of a model, it plays the tool calls of ``$CURSOR_STANDIN_SCRIPT`` (a JSON list of ``[tool, arguments]``)
through the MCP server, with the `mcp` SDK's client. ``$CURSOR_STANDIN_HANG=<marker>`` makes it start a child process
(with the marker as its last argument, so that the test finds it among the host's processes: the CLI's sandbox has
pids of its own and nothing of the host to write to) and then sleep (for the timeout test); a ``standin_child``
event says it started. ``$CURSOR_STANDIN_PRELUDE``
(a JSON list of events) is printed first, then ``$CURSOR_STANDIN_NOISE`` lines of padding (more than a pipe holds),
to check that a malformed event does not stop kernelgym from reading the stream.
"""
from __future__ import annotations

import argparse
import asyncio
import fnmatch
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path


def emit(event: dict) -> None:
    print(json.dumps(event), flush=True)


def fail(message: str) -> None:
    print(f"Error: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def allowed(permissions: dict, server: str, tool: str) -> bool:
    rule = f"Mcp({server}:{tool})"
    if any(fnmatch.fnmatch(rule, p) for p in permissions.get("deny", [])):
        return False
    return any(fnmatch.fnmatch(rule, p) for p in permissions.get("allow", []))


async def play(url: str, headers: dict, script: list, session_id: str, permissions: dict) -> int:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    calls = 0
    async with create_mcp_http_client(headers=headers) as http, streamable_http_client(url, http_client=http) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            for tool, arguments in script:
                if tool not in names or not allowed(permissions, "kernelgym", tool):
                    emit({"type": "assistant", "session_id": session_id, "message": {"role": "assistant", "content": [
                        {"type": "text", "text": f"tool {tool} is not available or not permitted"}]}})
                    continue
                call_id = f"call_{uuid.uuid4().hex[:8]}"
                mcp_call = {"mcpToolCall": {"args": {"providerIdentifier": "kernelgym", "toolName": tool,
                                                     "args": arguments}}}
                emit({"type": "tool_call", "subtype": "started", "call_id": call_id, "tool_call": mcp_call,
                      "session_id": session_id})
                result = await session.call_tool(tool, arguments)
                text = "".join(getattr(c, "text", "") for c in result.content)
                mcp_call["mcpToolCall"]["result"] = {"success": {"content": [{"text": {"text": text}}]}}
                emit({"type": "tool_call", "subtype": "completed", "call_id": call_id, "tool_call": mcp_call,
                      "session_id": session_id})
                calls += 1
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(prog="cursor-agent", add_help=True)
    parser.add_argument("-p", "--print", action="store_true", dest="print_mode")
    parser.add_argument("--output-format", choices=["text", "json", "stream-json"], default="text")
    parser.add_argument("--model")
    parser.add_argument("--workspace")
    parser.add_argument("--approve-mcps", action="store_true")
    parser.add_argument("--trust", action="store_true")
    parser.add_argument("-f", "--force", action="store_true")
    parser.add_argument("--api-key")
    parser.add_argument("prompt", nargs="?")
    args = parser.parse_args()  # an unknown flag exits 2 with usage, as a commander CLI does
    if not args.print_mode or not args.prompt:
        fail("this stand-in only runs in print mode with a prompt")
    if not (args.api_key or os.environ.get("CURSOR_API_KEY")):
        fail("Authentication required. Set CURSOR_API_KEY or pass --api-key.")
    workspace = Path(args.workspace or os.getcwd())
    mcp_file = workspace / ".cursor" / "mcp.json"
    servers = json.loads(mcp_file.read_text()).get("mcpServers", {}) if mcp_file.is_file() else {}
    if servers and not args.approve_mcps:
        fail(f"MCP servers {sorted(servers)} need approval: run interactively once or pass --approve-mcps")
    cli_file = workspace / ".cursor" / "cli.json"
    permissions = json.loads(cli_file.read_text()).get("permissions", {}) if cli_file.is_file() else {}
    session_id = str(uuid.uuid4())
    start = time.monotonic()
    for event in json.loads(os.environ.get("CURSOR_STANDIN_PRELUDE", "[]")):
        emit(event)
    for i in range(int(os.environ.get("CURSOR_STANDIN_NOISE", "0"))):
        emit({"type": "noise", "i": i, "pad": "p" * 100})
    emit({"type": "system", "subtype": "init", "apiKeySource": "env" if not args.api_key else "flag",
          "cwd": str(workspace), "session_id": session_id, "model": args.model or "auto",
          "permissionMode": "force" if args.force else "default"})
    emit({"type": "user", "session_id": session_id, "message": {"role": "user", "content": [
        {"type": "text", "text": args.prompt}]}})
    if os.environ.get("CURSOR_STANDIN_HANG"):
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", os.environ["CURSOR_STANDIN_HANG"]])
        emit({"type": "standin_child", "marker": os.environ["CURSOR_STANDIN_HANG"]})
        time.sleep(600)
    script = json.loads(os.environ.get("CURSOR_STANDIN_SCRIPT", "[]"))
    server = servers.get("kernelgym", {})
    url, headers = server.get("url"), server.get("headers") or {}
    calls = asyncio.run(play(url, headers, script, session_id, permissions)) if url else 0
    text = f"Made {calls} tool calls."
    emit({"type": "assistant", "session_id": session_id, "message": {"role": "assistant", "content": [
        {"type": "text", "text": text}]}})
    emit({"type": "result", "subtype": "success", "is_error": False, "result": text, "session_id": session_id,
          "duration_ms": int((time.monotonic() - start) * 1000), "request_id": str(uuid.uuid4()),
          "usage": {"inputTokens": 1000 * (calls + 1), "outputTokens": 50 * (calls + 1), "cacheReadTokens": 0,
                    "cacheWriteTokens": 0}})


if __name__ == "__main__":
    main()
