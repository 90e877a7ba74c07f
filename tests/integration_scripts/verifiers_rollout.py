"""Runs one verifiers rollout of kernelgym's taskset (triton-rmsnorm) against a scripted OpenAI-compatible server on
loopback; prints the episode's reward, metrics and tool calls as JSON.

Run with .venv's python and .venv-verifiers' site-packages on PYTHONPATH: tests/test_integration_verifiers.py does.
verifiers' subprocess runtime hands the tool server (``python -m kernelgym.integrations.verifiers``) the host's
environment, PYTHONPATH included, so the server imports verifiers and the env's sandbox mounts .venv (torch, triton).
verifiers' null harness prepares its chat program with `uv sync --script` (a download); here a stand-in `uv` on
PATH answers with .venv-verifiers' python, which already holds the program's packages (openai, mcp, httpx). The
program streams its requests, so the server answers with server-sent events.

Usage: verifiers_rollout.py RUN_DIR PYTHON (the env's run_dir; the python the stand-in `uv` reports).
"""
import asyncio
import json
import os
import shutil
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


USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


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
        call = {"index": 0, "id": f"call_{i}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}
        base = {"id": f"c{i}", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
        if body.get("stream"):
            # verifiers' null harness streams: one delta with the whole call, a finish chunk, usage, [DONE].
            chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": None,
                                                                   "tool_calls": [call]}, "finish_reason": None}]},
                      {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
                      {**base, "choices": [], "usage": USAGE}]
            data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"
            kind = "text/event-stream"
        else:
            del call["index"]
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            data = json.dumps({**base, "object": "chat.completion", "usage": USAGE, "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls"}]}).encode()
            kind = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
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
                      "stop": trace.stop_condition, "errors": [e.message for e in trace.errors],
                      "requests": len(Scripted.requests), "tools": tools,
                      "tool_results": [m.get("content") for m in (Scripted.requests[-1]["messages"] if Scripted.requests
                                                                   else []) if m["role"] == "tool"],
                      "state": trace.state.model_dump(mode="json", exclude={"artifacts"})}, default=str))
    server.shutdown()
    shutil.rmtree(home, ignore_errors=True)  # verifiers' caches and runtimes live under this HOME


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
