"""The MCP bridge (kernelgym.agents.bridge) driven by the `mcp` SDK's own client over streamable HTTP on loopback:
the tools it serves are agent_tools.TOOLS, each call waits for its env step, and a whole episode goes tool calls ->
env steps -> graded reward -> trajectory on disk."""
import asyncio
import json
import threading
import urllib.error
import urllib.request

import pytest

pytest.importorskip("mcp", reason="the agents extra is not installed: pip install -e '.[agents]' (.ci/setup does)")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

from kernelgym.agent_tools import TOOLS  # noqa: E402
from kernelgym.agents.bridge import EPISODE_OVER, MCPBridge  # noqa: E402


async def _client(url, calls, headers):
    """Call each (tool, arguments) of `calls` in order; return the listed tools and each result's (text, error)."""
    async with create_mcp_http_client(headers=headers) as http, streamable_http_client(url, http_client=http) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            results = []
            for name, args in calls:
                r = await session.call_tool(name, args)
                results.append(("".join(c.text for c in r.content), r.is_error))
            return tools, results


def _run_client(bridge, calls, headers=None):
    """`_client` against `bridge`, with its bearer token unless `headers` says otherwise."""
    headers = bridge.headers() if headers is None else headers
    return asyncio.run(asyncio.wait_for(_client(bridge.url, calls, headers), timeout=60))


def _post(url, headers):
    """The HTTP status of an MCP initialize request to `url` with `headers`."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}})
    req = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.fixture
def bridge():
    b = MCPBridge()
    b.start()
    yield b
    b.close()


def test_serves_agent_tools_and_waits_for_each_step(bridge):
    assert bridge.url.startswith("http://127.0.0.1:")
    seen = []

    def env_side():  # stands in for the policy: each call is answered with "its observation"
        for i in range(2):
            call = bridge.calls.get(timeout=30)
            seen.append(call.action)
            call.reply(f"observation {i}")
    t = threading.Thread(target=env_side)
    t.start()
    tools, results = _run_client(bridge, [("shell", {"cmd": "python check.py"}),
                                              ("edit_file", {"path": "kernel.py", "old": "a", "new": "b",
                                                             "truncate": True})])
    t.join(10)
    assert [(t.name, t.input_schema) for t in tools] == [(t["name"], t["input_schema"]) for t in TOOLS]
    assert results == [("observation 0", False), ("observation 1", False)]
    # the model cannot end the episode truncated: that is the policy's signal alone
    assert seen == [{"cmd": "python check.py", "kind": "shell"},
                    {"path": "kernel.py", "old": "a", "new": "b", "kind": "edit_file"}]


def test_calls_after_the_episode_are_refused(bridge):
    bridge.end_episode()
    _, results = _run_client(bridge, [("read_file", {"path": "kernel.py"})])
    assert results == [(EPISODE_OVER, True)] and bridge.calls.empty()


def test_env_errors_reach_the_cli_as_error_results(bridge):
    """An action the env refused ("error: ...") is an is_error tool result; any other observation is not."""
    def env_side():
        for reply in ("error: no file 'nope.py' in the workspace", "exit code 1\nerror: in the output"):
            bridge.calls.get(timeout=30).reply(reply)
    t = threading.Thread(target=env_side)
    t.start()
    _, results = _run_client(bridge, [("read_file", {"path": "nope.py"}), ("shell", {"cmd": "false"})])
    t.join(10)
    assert results == [("error: no file 'nope.py' in the workspace", True),
                       ("exit code 1\nerror: in the output", False)]


def test_requests_without_the_bearer_token_are_refused(bridge):
    """Knowing the URL (Codex has it on its command line) is not enough to drive the episode: a request needs the
    per-episode token; the token is random per bridge."""
    assert _post(bridge.url, {}) == 401
    assert _post(bridge.url, {"Authorization": "Bearer wrong-token"}) == 401
    assert _post(bridge.url, {"Authorization": bridge.token}) == 401  # the scheme is part of it
    assert _post(bridge.url, bridge.headers()) == 200
    with pytest.raises(Exception):  # the SDK's client without the token gets nowhere
        _run_client(bridge, [("submit", {})], headers={})
    assert bridge.calls.empty()  # nothing reached the env
    other = MCPBridge()
    try:
        assert other.token != bridge.token and len(bridge.token) >= 32
    finally:
        other.close()


def test_unknown_path_is_not_served(bridge):
    wrong = bridge.url.rsplit("/", 1)[0] + "/guessed"
    req = urllib.request.Request(wrong, data=b"{}", method="POST", headers={"content-type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code in (401, 404)  # no token: 401 before the path is looked at
    assert _post(wrong, bridge.headers()) == 404


def test_whole_episode_through_an_mcp_client(tmp_path, require_bwrap):
    """A real MCP client's tool calls are the env's steps; submit ends the episode with the graded reward, and the
    trajectory on disk holds every action and observation."""
    from kernelgym.env import KernelArenaEnv
    from kernelgym.wrappers import TrajectoryRecorder

    env = TrajectoryRecorder(KernelArenaEnv("triton-rmsnorm", run_dir=tmp_path, hardware="cpu-interpreter"),
                             tmp_path / "trajectories.jsonl")
    env.reset(seed=0)
    bridge = MCPBridge()
    bridge.start()
    out = {}
    client = threading.Thread(target=lambda: out.update(r=_run_client(bridge, [
        ("read_file", {"path": "kernel.py"}), ("shell", {"cmd": "python check.py"}), ("submit", {})])))
    client.start()
    try:
        done, reward = False, None
        while not done:
            call = bridge.calls.get(timeout=60)
            obs, reward, terminated, truncated, info = env.step(call.action)
            call.reply(obs["output"])
            done = terminated or truncated
    finally:
        client.join(60)
        bridge.close()
        env.close()
    assert reward == 120.0 and terminated
    _, results = out["r"]
    assert "def " in results[0][0] and "submitted" in results[2][0]
    lines = [json.loads(x) for x in (tmp_path / "trajectories.jsonl").read_text().splitlines()]
    assert [x["action"]["kind"] for x in lines[1:]] == ["read_file", "shell", "submit"]
    assert lines[2]["observation"]["output"] == results[1][0] and lines[-1]["reward"] == 120.0
