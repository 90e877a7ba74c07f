"""`anthropic`: a model behind the Anthropic Messages API drives the env through tools (kernelgym.agent_tools).

One env action per act(): the reply's tool calls are queued and handed out one by one, each observation going
back as that call's ``tool_result``. The task prompt is the first user message, marked for prompt caching together
with the conversation's last block, so each request reads the earlier ones from the cache. Retries, context
trimming and token/cost accounting are ToolCallingPolicy's (see docs/POLICIES.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelgym.agent_tools import ApiPolicyConfig, Reply, ToolCall, ToolCallingPolicy, anthropic_tools
from kernelgym.usage import StepUsage

#: The key's variable (the default api_key_env) and the SDK (pip install 'kernelgym[agents]').
REQUIRES = ["env:ANTHROPIC_API_KEY", "python:anthropic"]

_CACHE = {"type": "ephemeral"}


@dataclass
class AnthropicConfig(ApiPolicyConfig):
    model: str = "claude-sonnet-4-5"
    """The model id, e.g. claude-sonnet-4-5, claude-opus-4-5, claude-haiku-4-5."""
    api_key_env: str | None = "ANTHROPIC_API_KEY"
    """Name of the env var holding the API key, read at the first API call."""
    prompt_caching: bool = True
    """Mark the prompt and the conversation's last block with cache_control (cache reads cost a tenth)."""


class AnthropicPolicy(ToolCallingPolicy):
    """Drives the env with a model of the Anthropic Messages API; see the module docstring."""

    def __init__(self, config: AnthropicConfig):
        super().__init__(config)
        # Imported here, not at the top: `kernelgym list` works without the SDK installed.
        self._sdk = self.import_sdk("anthropic")
        self.connection_errors = (self._sdk.APIConnectionError,)

    def _make_client(self, api_key: str) -> Any:
        # The SDK's own retries are off: ToolCallingPolicy retries, counts the retries and honours retry-after.
        return self._sdk.Anthropic(api_key=api_key, base_url=self.config.base_url, max_retries=0,
                                   timeout=self.config.timeout_s)

    def _messages(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The history as Messages API messages: the prompt, then replies, tool results (one user message per
        reply's results) and nudges."""
        messages = [{"role": "user", "content": [{"type": "text", "text": self.prompt or "(no prompt)"}]}]
        for e in history:
            if e["role"] == "assistant":
                content = [{"type": "text", "text": e["text"]}] if e["text"] else []
                content += [{"type": "tool_use", "id": c.id, "name": c.name,
                             "input": c.arguments if isinstance(c.arguments, dict) else {}} for c in e["calls"]]
                messages.append({"role": "assistant", "content": content or [{"type": "text", "text": "(empty)"}]})
                continue
            block = ({"type": "tool_result", "tool_use_id": e["call"].id, "content": e["output"] or "(no output)"}
                     if e["role"] == "tool" else {"type": "text", "text": e["text"]})
            if messages[-1]["role"] == "user":
                messages[-1]["content"].append(block)
            else:
                messages.append({"role": "user", "content": [block]})
        if self.config.prompt_caching:
            messages[0]["content"][0]["cache_control"] = _CACHE
            messages[-1]["content"][-1]["cache_control"] = _CACHE
        return messages

    def _complete(self, client: Any, history: list[dict[str, Any]]) -> Reply:
        cfg = self.config
        kwargs = {"temperature": cfg.temperature} if cfg.temperature is not None else {}
        if cfg.system:
            kwargs["system"] = cfg.system
        response = client.messages.create(model=cfg.model, max_tokens=cfg.max_tokens, tools=anthropic_tools(),
                                          messages=self._messages(history), **kwargs)
        text = "\n".join(b.text for b in response.content if b.type == "text" and b.text)
        calls = [ToolCall(b.id, b.name, b.input) for b in response.content if b.type == "tool_use"]
        u = response.usage
        usage = StepUsage(input_tokens=u.input_tokens or 0, output_tokens=u.output_tokens or 0,
                          cached_tokens=getattr(u, "cache_read_input_tokens", None) or 0,
                          cache_write_tokens=getattr(u, "cache_creation_input_tokens", None) or 0,
                          model=response.model or cfg.model)
        return Reply(text, calls, usage)
