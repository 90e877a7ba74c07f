"""Fake model APIs on loopback that script an agent CLI's tool calls: Anthropic Messages (Claude Code) and OpenAI
Responses (Codex).

Each server answers the CLI's main-loop requests (those offering the kernelgym tools) from a script: reply k is
the k-th scripted tool call, where k is the number of tool results already in the request's history, so a retried
request gets the same answer; once the script is spent it answers with a closing text message. Any other request
(a title, a quota probe, a model list) gets a minimal answer. Every request body and header is kept in `requests`
so a test can check what the CLI sent (which tools it offered, which key it used).

A server binds 127.0.0.1 on an ephemeral port, serves in a daemon thread, and stops on `close()` (or at the end of a
``with`` block); each response is written at once, so nothing waits on the network.
"""
from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: One scripted tool call: (tool name without the CLI's prefix, arguments).
ToolCall = tuple[str, dict[str, Any]]


class _FakeServer:
    """Shared part: the HTTP server thread, the request log, and picking the next scripted call."""

    def __init__(self, script: list[ToolCall], input_tokens: int = 1000, output_tokens: int = 50,
                 cached_tokens: int = 0, final_text: str = "Done: the kernel is submitted."):
        self.script, self.final_text = list(script), final_text
        self.input_tokens, self.output_tokens, self.cached_tokens = input_tokens, output_tokens, cached_tokens
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet: tests read `requests` instead
                pass

            def _body(self) -> dict:
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    return json.loads(raw or b"{}")
                except ValueError:
                    return {"_raw": raw.decode(errors="replace")}

            def do_GET(self):
                fake._log("GET", self.path, dict(self.headers), {})
                fake._send_json(self, *fake.get(self.path))

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self):
                body = self._body()
                fake._log("POST", self.path, dict(self.headers), body)
                fake.post(self, self.path, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _log(self, method, path, headers, body):
        with self._lock:
            self.requests.append({"method": method, "path": path, "headers": headers, "body": body})

    @staticmethod
    def _send_json(handler, status: int, payload: Any):
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    @staticmethod
    def _send_sse(handler, events: list[tuple[str, dict]]):
        data = "".join(f"event: {name}\ndata: {json.dumps(payload)}\n\n" for name, payload in events).encode()
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("cache-control", "no-cache")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def next_call(self, done: int, tool_names: list[str]) -> tuple[str, dict] | None:
        """The scripted call after `done` tool results, named as the CLI offers it, or None when spent."""
        if done >= len(self.script):
            return None
        short, args = self.script[done]
        full = next((n for n in tool_names if n == short or n.endswith("__" + short) or n.endswith("_" + short)),
                    short)
        return full, args

    def get(self, path: str) -> tuple[int, Any]:
        return 200, {"data": [], "models": [], "object": "list"}

    def post(self, handler, path: str, body: dict) -> None:
        raise NotImplementedError

    def tool_requests(self) -> list[dict]:
        """The logged main-loop requests (those that offered tools)."""
        return [r for r in self.requests if r["body"].get("tools")]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FakeAnthropic(_FakeServer):
    """Anthropic Messages API (``POST /v1/messages``, streamed as SSE when asked) for Claude Code."""

    def post(self, handler, path, body):
        if "count_tokens" in path:
            return self._send_json(handler, 200, {"input_tokens": 10})
        if not path.startswith("/v1/messages"):
            return self._send_json(handler, 404, {"type": "error", "error": {"type": "not_found_error",
                                                                             "message": path}})
        tools = [t.get("name", "") for t in body.get("tools") or []]
        done = sum(1 for m in body.get("messages", []) if isinstance(m.get("content"), list)
                   for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")
        call = self.next_call(done, tools) if any("kernelgym" in t for t in tools) else None
        msg_id = f"msg_{uuid.uuid4().hex[:20]}"
        usage = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                 "cache_read_input_tokens": self.cached_tokens, "cache_creation_input_tokens": 0}
        if call:
            block = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": call[0], "input": {}}
            stop, delta = "tool_use", {"type": "input_json_delta", "partial_json": json.dumps(call[1])}
        else:
            text = self.final_text if tools else "ok"
            block, stop, delta = {"type": "text", "text": ""}, "end_turn", {"type": "text_delta", "text": text}
        model = body.get("model", "claude-fake")
        if not body.get("stream"):
            content = dict(block, input=call[1]) if call else {"type": "text", "text": delta["text"]}
            return self._send_json(handler, 200, {"id": msg_id, "type": "message", "role": "assistant",
                                                  "model": model, "content": [content], "stop_reason": stop,
                                                  "stop_sequence": None, "usage": usage})
        self._send_sse(handler, [
            ("message_start", {"type": "message_start", "message": {
                "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": self.output_tokens}}),
            ("message_stop", {"type": "message_stop"}),
        ])


class FakeOpenAI(_FakeServer):
    """OpenAI Responses API (``POST /v1/responses``, streamed as SSE) for Codex."""

    def post(self, handler, path, body):
        if not path.rstrip("/").endswith("/responses"):
            return self._send_json(handler, 404, {"error": {"message": f"no such endpoint {path}"}})
        # Codex offers an MCP server's tools as one tool of type "namespace" (name mcp__<server>) holding them;
        # a call of one names the namespace beside the tool's own name.
        namespaces, tools = {}, []
        for t in body.get("tools") or []:
            if isinstance(t, dict) and t.get("type") == "namespace":
                for child in t.get("tools") or []:
                    namespaces[child.get("name")] = t.get("name")
                    tools.append(child.get("name", ""))
            elif isinstance(t, dict):
                tools.append(t.get("name", ""))
        items = body.get("input") if isinstance(body.get("input"), list) else []
        done = sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output")
        offered = any("kernelgym" in n for n in [*tools, *namespaces.values()])
        call = self.next_call(done, tools) if offered else None
        resp_id = f"resp_{uuid.uuid4().hex[:20]}"
        if call:
            item = {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:20]}",
                    "call_id": f"call_{uuid.uuid4().hex[:20]}", "name": call[0], "arguments": json.dumps(call[1]),
                    "status": "completed"}
            if namespaces.get(call[0]):
                item["namespace"] = namespaces[call[0]]
        else:
            item = {"type": "message", "id": f"msg_{uuid.uuid4().hex[:20]}", "role": "assistant",
                    "status": "completed", "content": [{"type": "output_text", "text": self.final_text,
                                                        "annotations": []}]}
        usage = {"input_tokens": self.input_tokens, "input_tokens_details": {"cached_tokens": self.cached_tokens},
                 "output_tokens": self.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": self.input_tokens + self.output_tokens}
        response = {"id": resp_id, "object": "response", "status": "in_progress", "model": body.get("model"),
                    "output": []}
        self._send_sse(handler, [
            ("response.created", {"type": "response.created", "sequence_number": 0, "response": response}),
            ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                            "output_index": 0, "item": dict(item, status="in_progress")}),
            ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 2,
                                           "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "sequence_number": 3, "response": dict(
                response, status="completed", output=[item], usage=usage)}),
        ])
