"""`MCPBridge`: the env's actions served as MCP tools, one tool call at a time, to a coding-agent CLI.

The CLI runs outside the sandbox and acts only through these tools. A tool call does not touch the env itself: the
MCP handler (in the server's thread) turns it into an env action (`kernelgym.agent_tools.tool_call_to_action`),
puts a `ToolCall` on `calls` and waits; the policy takes it from there in `act()`, hands the action to the env, and
delivers the next observation with `ToolCall.reply`, which becomes the tool result. So each tool call is one
``env.step`` and RL loops, wrappers and the trajectory recorder see the CLI as any other policy.

The server speaks MCP's streamable HTTP on 127.0.0.1, on an ephemeral port, under a random path (a process that
does not know the path gets 404), in a daemon thread of this process. Every request must also carry the bridge's
per-episode bearer token (``Authorization: Bearer <token>``; 401 otherwise): the URL may be seen by any local
process (Codex gets it on its command line, readable in /proc/<pid>/cmdline), the token only by the CLI, which
gets it through a private config file or an environment variable (see each CLI policy's `command`).
"""
from __future__ import annotations

import os
import queue
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kernelgym.errors import KernelGymError

#: What the bridge answers when a call comes after the episode ended (or the bridge closed).
EPISODE_OVER = "error: the episode is over; no more tool calls are taken"
#: The prefix of the env's observations for an action it refused; such a tool result is flagged is_error.
ERROR_PREFIX = "error:"


class BearerAuth:
    """ASGI middleware: HTTP requests without ``Authorization: Bearer <token>`` get 401 before reaching `app`.

    The token is compared in constant time. Non-HTTP scopes (the server's lifespan) pass through.
    """

    def __init__(self, app, token: str):
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send):
        if scope.get("type") == "http":
            given = next((v for k, v in scope.get("headers") or [] if k.lower() == b"authorization"), b"")
            if not secrets.compare_digest(given, self._expected):
                body = b'{"error": "unauthorized: this MCP server needs its bearer token"}'
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode()),
                                        (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


@dataclass
class ToolCall:
    """One MCP tool call waiting for its env step. `reply(text)` releases the MCP handler with `text`."""

    name: str
    arguments: dict[str, Any]
    action: dict[str, Any] | str
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    result: str | None = None

    def reply(self, text: str) -> None:
        """Deliver `text` (the observation) as the tool's result; later replies are ignored."""
        if not self._done.is_set():
            self.result = text
            self._done.set()

    def wait(self) -> str:
        self._done.wait()
        return self.result or ""


def tool_specs() -> list[dict[str, Any]]:
    """The env's actions as tools: ``[{"name", "description", "input_schema"}]`` from `kernelgym.agent_tools`."""
    from kernelgym import agent_tools
    return [_normalize(t) for t in agent_tools.TOOLS]


def _normalize(tool: Any) -> dict[str, Any]:
    get = tool.get if isinstance(tool, dict) else (lambda k, d=None: getattr(tool, k, d))
    schema = get("input_schema") or get("inputSchema") or get("parameters") or {"type": "object"}
    return {"name": get("name"), "description": get("description") or "", "input_schema": schema}


class MCPBridge:
    """An MCP server (streamable HTTP, loopback) whose tools are the env's actions; calls queue up in `calls`.

    Args:
        server_name: the MCP server's name, which the CLIs put in their tool names (``mcp__kernelgym__shell``).

    Example:
        >>> bridge = MCPBridge(); url = bridge.start()
        >>> call = bridge.calls.get()          # blocks until the CLI calls a tool
        >>> call.reply("the observation")      # the tool result the CLI sees
        >>> bridge.close()
    """

    def __init__(self, server_name: str = "kernelgym"):
        self.server_name = server_name
        self.calls: queue.Queue[ToolCall] = queue.Queue()
        self.url: str | None = None
        #: The per-episode bearer token every request must carry (``Authorization: Bearer <token>``).
        self.token = secrets.token_urlsafe(32)
        self._pending: list[ToolCall] = []
        self._over = False
        self._lock = threading.Lock()
        self._server = None
        self._thread: threading.Thread | None = None

    # -- MCP handlers (run in the server's event loop) ----------------------------------------------------------
    def _build_app(self, path: str):
        import anyio
        import mcp_types as types
        from mcp.server.lowlevel import Server

        from kernelgym.agent_tools import tool_call_to_action

        tools = [types.Tool(name=t["name"], description=t["description"], input_schema=t["input_schema"])
                 for t in tool_specs()]

        async def list_tools(ctx, params):
            return types.ListToolsResult(tools=tools)

        def text_result(text: str, error: bool = False):
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)

        async def call_tool(ctx, params):
            arguments = dict(params.arguments or {})
            # Never raises (the env says what is wrong); drops "truncate" and "kind" from the arguments, so the
            # model cannot forge the policy's "the CLI stopped" signal.
            action = tool_call_to_action(params.name, arguments)
            call = ToolCall(params.name, arguments, action)
            with self._lock:
                if self._over:
                    return text_result(EPISODE_OVER, error=True)
                self._pending.append(call)
            self.calls.put(call)
            text = await anyio.to_thread.run_sync(call.wait, abandon_on_cancel=True)
            # An action the env refused (and "episode over") is an error result, so the CLI treats it as one.
            return text_result(text, error=text.startswith(ERROR_PREFIX))

        server = Server(self.server_name, version="1", on_list_tools=list_tools, on_call_tool=call_tool)
        return BearerAuth(server.streamable_http_app(streamable_http_path=path, host="127.0.0.1"), self.token)

    # -- lifecycle ----------------------------------------------------------------------------------------------
    def start(self, timeout_s: float = 30.0, unix_socket: str | None = None) -> str:
        """Start serving; return the URL to give the CLI (``http://127.0.0.1:PORT/mcp/<random>``). The CLI must
        also send `headers()` (the bearer token) with every request. With `unix_socket` (a path), the same server
        also listens there, mode 0666 (its folder keeps others out): a CLI in a sandbox of its own network reaches
        it through that socket, relayed from 127.0.0.1:PORT inside (`kernelgym.agents.confine`).

        Raises:
            KernelGymError: the mcp SDK is not installed.
            RuntimeError: the server did not come up within `timeout_s` seconds.
        """
        try:
            import mcp.server.lowlevel  # noqa: F401
            import uvicorn
        except ImportError as e:
            raise KernelGymError(f"the agent CLI policies need the MCP SDK ({e}): pip install 'kernelgym[agents]' "
                                 f"(bash .ci/setup does)") from None

        path = f"/mcp/{secrets.token_urlsafe(12)}"
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sockets = [sock]
        if unix_socket is not None:
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.bind(str(unix_socket))
            os.chmod(unix_socket, 0o666)
            sockets.append(unix)
        config = uvicorn.Config(self._build_app(path), log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": sockets}, daemon=True,
                                        name=f"mcp-bridge-{port}")
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the MCP bridge did not start on 127.0.0.1:{port}")
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{port}{path}"
        return self.url

    def headers(self) -> dict[str, str]:
        """The HTTP headers a client needs: ``{"Authorization": "Bearer <token>"}``."""
        return {"Authorization": f"Bearer {self.token}"}

    def end_episode(self) -> None:
        """Refuse further calls and release every waiting one with `EPISODE_OVER`."""
        with self._lock:
            self._over = True
            pending, self._pending = self._pending, []
        for call in pending:
            call.reply(EPISODE_OVER)

    def close(self) -> None:
        """End the episode and stop the server (waits up to a few seconds for its thread)."""
        self.end_episode()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None
