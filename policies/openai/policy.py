"""`openai`: a model behind the OpenAI chat.completions API drives the env through tools (kernelgym.agent_tools).

chat.completions with function tools, rather than the Responses API, because OpenAI-compatible servers (vLLM,
SGLang, llama.cpp) serve it too: set `base_url` (or $OPENAI_BASE_URL) to the server's ``/v1`` and `model` to the
served model, and a model you trained plugs in here. One env action per act(): the reply's tool calls are queued
and handed out one by one, each observation going back as that call's ``tool`` message. Retries, context trimming
and token/cost accounting are ToolCallingPolicy's (see docs/POLICIES.md).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kernelgym.agent_tools import ApiPolicyConfig, Reply, ToolCall, ToolCallingPolicy, new_call_id, openai_tools
from kernelgym.usage import StepUsage

#: The key's variable (the default api_key_env; not needed for a local server with api_key_env: null) and the SDK.
REQUIRES = ["env:OPENAI_API_KEY", "python:openai"]


@dataclass
class OpenaiConfig(ApiPolicyConfig):
    model: str = "gpt-5"
    """The model id, e.g. gpt-5, gpt-4.1, or the name a vLLM/SGLang server serves."""
    api_key_env: str | None = "OPENAI_API_KEY"
    """Name of the env var holding the API key, read at the first API call; null for a local server that checks
    no key."""
    parallel_tool_calls: bool | None = None
    """Allow several tool calls per reply (they are queued); null: the server's default (some reject the field)."""


class OpenaiPolicy(ToolCallingPolicy):
    """Drives the env with a model of an OpenAI-compatible chat.completions API; see the module docstring."""

    def __init__(self, config: OpenaiConfig):
        super().__init__(config)
        # Imported here, not at the top: `kernelgym list` works without the SDK installed.
        self._sdk = self.import_sdk("openai")
        self.connection_errors = (self._sdk.APIConnectionError,)

    def _make_client(self, api_key: str) -> Any:
        # The SDK's own retries are off: ToolCallingPolicy retries, counts the retries and honours retry-after.
        return self._sdk.OpenAI(api_key=api_key, base_url=self.config.base_url, max_retries=0,
                                timeout=self.config.timeout_s)

    def _messages(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The history as chat messages: system, the prompt, then replies, tool results and nudges."""
        messages = [{"role": "system", "content": self.config.system}] if self.config.system else []
        messages.append({"role": "user", "content": self.prompt or "(no prompt)"})
        for e in history:
            if e["role"] == "assistant":
                message: dict[str, Any] = {"role": "assistant", "content": e["text"] or ""}
                if e["calls"]:
                    message["tool_calls"] = [
                        {"id": c.id, "type": "function",
                         "function": {"name": c.name, "arguments": c.arguments if isinstance(c.arguments, str)
                                      else json.dumps(c.arguments)}} for c in e["calls"]]
                messages.append(message)
            elif e["role"] == "tool":
                messages.append({"role": "tool", "tool_call_id": e["call"].id, "content": e["output"]})
            else:
                messages.append({"role": "user", "content": e["text"]})
        return messages

    def _complete(self, client: Any, history: list[dict[str, Any]]) -> Reply:
        cfg = self.config
        kwargs: dict[str, Any] = {"temperature": cfg.temperature} if cfg.temperature is not None else {}
        if cfg.parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = cfg.parallel_tool_calls
        response = client.chat.completions.create(model=cfg.model, messages=self._messages(history),
                                                  tools=openai_tools(), max_completion_tokens=cfg.max_tokens,
                                                  **kwargs)
        message = response.choices[0].message
        calls = []
        for c in message.tool_calls or []:
            function = getattr(c, "function", None)
            if function is None:  # not a function call (a custom tool): nothing the env can run
                continue
            try:
                arguments = json.loads(function.arguments) if function.arguments else {}
            except ValueError:
                arguments = function.arguments  # kept raw: the env answers with an error the model can read
            calls.append(ToolCall(c.id or new_call_id(), function.name, arguments))
        u = response.usage
        details = getattr(u, "prompt_tokens_details", None) if u else None
        cached = (getattr(details, "cached_tokens", None) or 0) if details else 0
        # clamped: a server that reports more cached than prompt tokens must not make a negative count
        usage = StepUsage(input_tokens=max(0, (u.prompt_tokens or 0) - cached) if u else 0,
                          output_tokens=(u.completion_tokens or 0) if u else 0, cached_tokens=cached,
                          model=response.model or cfg.model,
                          note=None if u else "the server reported no token usage")
        return Reply(message.content or "", calls, usage)
