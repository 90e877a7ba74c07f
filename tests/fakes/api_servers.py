"""Fake Anthropic Messages and OpenAI chat.completions servers on loopback, answering from a script.

A server binds 127.0.0.1 on an ephemeral port and serves from a daemon thread. It answers each POST to its API's
path with the next scripted response (status, JSON body, headers), and keeps every request (path, headers with lower-case names, JSON
body) in `requests`. When the script is spent it answers 400, so a policy that asks too often fails visibly.
It stops on `close()`, at the end of a ``with`` block, or by itself after `lifetime_s`.

The response builders (`anthropic_reply`, `openai_reply`, `rate_limited`) produce the wire format the official
SDKs parse.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: One scripted response: (HTTP status, JSON body, extra headers).
Response = tuple[int, dict[str, Any], dict[str, str]]


class FakeApiServer:
    """A scripted JSON API on 127.0.0.1; see the module docstring.

    Args:
        path: the one path answered from the script (e.g. "/v1/messages"); any other gets 404.
        script: the responses, in order.
        lifetime_s: the server shuts itself down after this many seconds, whatever the test does.
    """

    def __init__(self, path: str, script: list[Response], lifetime_s: float = 300.0):
        self.path, self.script = path, list(script)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", 0)) or 0)
                with server._lock:
                    server.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                            "body": json.loads(body or b"{}")})
                    if self.path != server.path:
                        status, payload, headers = 404, {"error": {"message": f"no route {self.path}"}}, {}
                    elif server.script:
                        status, payload, headers = server.script.pop(0)
                    else:
                        status, payload, headers = 400, {"type": "error", "error": {
                            "type": "invalid_request_error", "message": "fake server: script exhausted"}}, {}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # quiet: pytest output stays readable
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        self._timer = threading.Timer(lifetime_s, self.close)
        self._timer.daemon = True
        self._timer.start()
        self._closed = False

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    def close(self) -> None:
        """Stop serving (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._timer.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeApiServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def fake_anthropic(script: list[Response], **kw) -> FakeApiServer:
    """A fake Messages API; point the SDK at ``http://127.0.0.1:<port>`` (it posts to /v1/messages)."""
    server = FakeApiServer("/v1/messages", script, **kw)
    server.base_url = f"http://127.0.0.1:{server.port}"
    return server


def fake_openai(script: list[Response], **kw) -> FakeApiServer:
    """A fake chat.completions API; point the SDK at ``http://127.0.0.1:<port>/v1``."""
    server = FakeApiServer("/v1/chat/completions", script, **kw)
    server.base_url = f"http://127.0.0.1:{server.port}/v1"
    return server


def anthropic_reply(text: str = "", calls: list[tuple[str, dict]] = (), model: str = "claude-sonnet-4-5-20250929",
                    input_tokens: int = 100, output_tokens: int = 10, cache_read: int = 0,
                    cache_write: int = 0) -> Response:
    """A Messages API reply with `text` and tool_use blocks for `calls` [(name, input)]."""
    content = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": f"toolu_{name}_{i}", "name": name, "input": args}
                for i, (name, args) in enumerate(calls)]
    return 200, {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": content,
                 "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
                 "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                           "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write}}, {}


def openai_reply(text: str = "", calls: list[tuple[str, Any]] = (), model: str = "gpt-5-2025-08-07",
                 prompt_tokens: int = 100, completion_tokens: int = 10, cached: int = 0) -> Response:
    """A chat.completions reply with `text` and function tool calls for `calls` [(name, arguments)]; a dict is
    sent as JSON text, a string as it is (to script malformed arguments)."""
    tool_calls = [{"id": f"call_{name}_{i}", "type": "function",
                   "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
                  for i, (name, args) in enumerate(calls)]
    message = {"role": "assistant", "content": text or None, **({"tool_calls": tool_calls} if tool_calls else {})}
    return 200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
                 "choices": [{"index": 0, "message": message,
                              "finish_reason": "tool_calls" if calls else "stop"}],
                 "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                           "total_tokens": prompt_tokens + completion_tokens,
                           "prompt_tokens_details": {"cached_tokens": cached}}}, {}


def rate_limited(retry_after_s: float = 0.0) -> Response:
    """A 429 with a retry-after header, in the error shape both APIs use."""
    return 429, {"type": "error", "error": {"type": "rate_limit_error", "message": "fake: rate limited"}}, \
        {"retry-after": str(retry_after_s)}


def server_error(status: int = 500) -> Response:
    """A 5xx (529 is Anthropic's overloaded)."""
    return status, {"type": "error", "error": {"type": "api_error", "message": f"fake: {status}"}}, {}
