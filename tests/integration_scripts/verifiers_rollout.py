"""Runs one verifiers rollout of kernelgym's taskset (triton-rmsnorm) against a scripted OpenAI-compatible server on
loopback; prints the episode's reward, metrics and tool calls as JSON.

Run with .venv's python and .venv-verifiers' site-packages on PYTHONPATH: tests/test_integration_verifiers.py does.
verifiers' null harness prepares its chat program with `uv sync --script` (a download); here a stand-in `uv` on
PATH answers with .venv-verifiers' python, which already holds the program's packages (openai, mcp, httpx).
"""
import asyncio
import json
import os
import stat
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FAKE_UV = """#!/bin/sh
case "$*" in
  *--help*) echo "--script" ;;
  "python find"*) echo "{python}" ;;
esac
exit 0
"""

CALLS = [("read_file", {"path": "kernel.py"}),
         ("edit_file", {"path": "kernel.py", "old": "BLOCK_SIZE = 1024", "new": "BLOCK_SIZE = 2048"}),
         ("submit", {})]


class Scripted(BaseHTTPRequestHandler):
    """chat.completions: the next scripted tool call per request; records each request's tools and messages."""

    requests = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Scripted.requests.append(body)
        i = sum(1 for m in body["messages"] if m["role"] == "assistant")
        name, args = CALLS[min(i, len(CALLS) - 1)]
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}
        reply = {"id": f"c{i}", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                 "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


async def main(run_dir, python):
    home = Path(tempfile.mkdtemp())
    bin_dir = home / "bin"
    bin_dir.mkdir()
    (bin_dir / "uv").write_text(FAKE_UV.format(python=python))
    (bin_dir / "uv").chmod(stat.S_IRWXU)
    os.environ.update(HOME=str(home), PATH=f"{bin_dir}:{os.environ['PATH']}", SCRIPTED_API_KEY="unused")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    import verifiers.v1 as vf

    from kernelgym.integrations.verifiers import load_environment

    env = load_environment(tasks=["triton-rmsnorm"], max_steps=8, run_dir=run_dir)
    (task,) = list(env.taskset)
    ctx = vf.ModelContext(model="scripted", client=vf.EvalClientConfig(
        base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key_var="SCRIPTED_API_KEY"))
    async with env.serving():
        (slot,) = env.slots(task, 1)
        episode = await env.run_slot(slot, ctx)
    traces = list(episode.traces) if hasattr(episode, "traces") else slot.traces
    trace = traces[0]
    tools = sorted(t["function"]["name"] for t in (Scripted.requests[0].get("tools", []) if Scripted.requests else []))
    print(json.dumps({"reward": trace.reward, "rewards": dict(trace.rewards), "metrics": dict(trace.metrics),
                      "stop": trace.stop_condition, "error": str(getattr(trace, "error", None)),
                      "requests": len(Scripted.requests), "tools": tools,
                      "state": trace.state.model_dump(mode="json", exclude={"artifacts"})}, default=str))
    server.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
