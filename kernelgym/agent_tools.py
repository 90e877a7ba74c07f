"""The env's actions as tools for model-driven agents, in one place, and the loop the API policies share.

- `TOOLS`: one tool per action kind (kernelgym.spaces.ACTION_KINDS): name, description and JSON-schema input.
  `anthropic_tools()`, `openai_tools()` (chat.completions) and `openai_response_tools()` (Responses API) render
  them for each SDK; an MCP server can serve `TOOLS` as they are (``inputSchema`` = ``input_schema``).
- `tool_call_to_action(name, arguments)`: a tool call as the env's action dict. It never raises: a malformed call
  becomes an action the env rejects with an ``error: ...`` observation, so the model sees what was wrong.
- `ToolCallingPolicy`: the shared part of the anthropic and openai policies: one env action per act() (several
  tool calls of one reply are queued), each observation fed back as that call's tool result, a nudge when a reply
  calls no tool, retries with backoff, context trimming, and usage accounting (`take_step_info`).
"""
from __future__ import annotations

import copy
import importlib
import json
import os
import random
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from kernelgym.errors import KernelGymError, PolicyConfigError
from kernelgym.usage import PriceTable, StepUsage

_PATH = {"type": "string", "description": "a path relative to the workspace, e.g. kernel.py"}

#: The env's actions as tools. Each tool's name is the action kind; its input's keys are the action's fields.
TOOLS: list[dict[str, Any]] = [
    {"name": "shell",
     "description": "Run a bash command in the workspace (the current directory; no network), e.g. "
                    "`python check.py`, which checks the kernel on the seen configs (and times it on a GPU). "
                    "Returns the exit code, stdout and stderr.",
     "input_schema": {"type": "object", "properties": {"cmd": {"type": "string", "description": "the command"}},
                      "required": ["cmd"]}},
    {"name": "read_file", "description": "Read a file of the workspace.",
     "input_schema": {"type": "object", "properties": {"path": _PATH}, "required": ["path"]}},
    {"name": "write_file", "description": "Replace a file's whole contents (creating it if needed).",
     "input_schema": {"type": "object", "properties": {"path": _PATH, "content": {"type": "string"}},
                      "required": ["path", "content"]}},
    {"name": "edit_file",
     "description": "Replace one exact occurrence of `old` with `new` in a file; `old` must occur exactly once "
                    "(copy it from read_file, whitespace included).",
     "input_schema": {"type": "object", "properties": {"path": _PATH, "old": {"type": "string"},
                                                       "new": {"type": "string"}},
                      "required": ["path", "old", "new"]}},
    {"name": "profile",
     "description": "Profile the kernel on one seen config (its index in configs.json): per-kernel device times, "
                    "plus hardware counters where a profiler is installed.",
     "input_schema": {"type": "object", "properties": {"config": {"type": "integer", "minimum": 0, "default": 0}},
                      "required": []}},
    {"name": "bench",
     "description": "Run `python bench.py`: what the grader would reward now, per seen config the speedup over the "
                    "original kernel and the score it implies (advisory; it does not check correctness, "
                    "check.py does).",
     "input_schema": {"type": "object", "properties": {}, "required": []}},
    {"name": "submit", "description": "End the episode; the kernel as it is now is graded.",
     "input_schema": {"type": "object", "properties": {}, "required": []}},
]
TOOL_NAMES = tuple(t["name"] for t in TOOLS)


def anthropic_tools() -> list[dict[str, Any]]:
    """`TOOLS` in the Anthropic Messages API's ``tools=[...]`` form."""
    return copy.deepcopy(TOOLS)


def openai_tools() -> list[dict[str, Any]]:
    """`TOOLS` as OpenAI chat.completions function tools (also what vLLM and SGLang accept)."""
    return [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                              "parameters": copy.deepcopy(t["input_schema"])}} for t in TOOLS]


def openai_response_tools() -> list[dict[str, Any]]:
    """`TOOLS` as OpenAI Responses API function tools."""
    return [{"type": "function", "name": t["name"], "description": t["description"],
             "parameters": copy.deepcopy(t["input_schema"])} for t in TOOLS]


def tool_call_to_action(name: str, arguments: Any) -> dict[str, Any] | str:
    """The env action for a tool call: ``{"kind": name, **arguments}``.

    Args:
        name: the tool's name (an action kind, see `TOOLS`).
        arguments: the call's input, a dict or its JSON text (OpenAI sends text; None or "" mean no arguments).

    Returns:
        The action dict; for arguments that are not a JSON object, the raw text or a dict the env refuses, so
        the model gets the env's ``error: ...`` observation instead of the policy crashing. Never raises.
    """
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        arguments = {}
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return arguments if isinstance(arguments, str) else arguments.decode(errors="replace")
    if not isinstance(arguments, dict):  # a JSON list or number: the env says an action must be an object
        return json.dumps(arguments)
    # The tool's name is the kind; "truncate" (end the episode truncated: "the agent stopped") is the policy's
    # signal alone. A model that sent either gets its call run without them.
    return {**{k: v for k, v in arguments.items() if k not in RESERVED_ARGUMENTS}, "kind": name}


#: Action fields a tool call's arguments may not set (see `tool_call_to_action`).
RESERVED_ARGUMENTS = frozenset({"kind", "truncate"})

#: Secrets registered by the policies that read them (`remember_secret`); `redact` replaces them.
_SECRETS: set[str] = set()
#: Shorter registered values are not redacted from free text: they would garble it and are no real key.
_MIN_SECRET_LEN = 8
REDACTED = "[redacted]"


def remember_secret(value: str) -> None:
    """Register `value` (an API key, a bearer token) so that `redact` removes it from any text from now on."""
    if value:
        _SECRETS.add(value)


def redact(text: str, *extra: str) -> str:
    """`text` with every registered secret (see `remember_secret`) and every value in `extra` replaced by
    ``[redacted]``; the one place error texts and transcripts are cleaned before they are written. Values shorter
    than 8 characters are left alone (no provider's key is that short; replacing them would garble the text)."""
    if not isinstance(text, str):
        text = str(text)
    values = {v for v in (*_SECRETS, *extra) if v and len(v) >= _MIN_SECRET_LEN}
    for value in sorted(values, key=len, reverse=True):  # longest first: a key containing another goes whole
        text = text.replace(value, REDACTED)
    return text


class MissingApiKeyError(KernelGymError):
    """The environment variable that should hold the API key is unset or empty; the message names it."""


class ModelApiError(KernelGymError):
    """A model request failed for good: not retried, or still failing when its retries were spent. The message
    names the SDK's error, the API's base URL and how many attempts were made in how long; the SDK's error is
    its ``__cause__``."""


def could_not_connect(error: BaseException) -> bool:
    """Whether `error` (or an exception it was raised from) is a failure to open a connection at all: refused,
    unknown host, unreachable network (httpx's ConnectError, which both SDKs wrap in APIConnectionError)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, (ConnectionRefusedError, socket.gaierror)) or type(error).__name__ == "ConnectError":
            return True
        error = error.__cause__ or error.__context__
    return False


@dataclass
class ToolCall:
    """One tool call of a model reply and the env action it maps to."""

    id: str
    name: str
    arguments: Any
    """The input as the model sent it: a dict, or the raw text when it was not a JSON object."""

    @property
    def action(self) -> dict[str, Any] | str:
        return tool_call_to_action(self.name, self.arguments)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass
class Reply:
    """A model reply as the shared loop needs it: text, tool calls and what it cost (tokens; model named)."""

    text: str
    calls: list[ToolCall]
    usage: StepUsage


@dataclass
class ApiPolicyConfig:
    """Fields both API policies share; each policy's config subclasses this with its own defaults."""

    model: str = ""
    """The model id sent to the API (for a local vLLM/SGLang server: the served model's name)."""
    base_url: str | None = None
    """API base URL; None: the SDK's default, or its env var (ANTHROPIC_BASE_URL / OPENAI_BASE_URL)."""
    api_key_env: str | None = None
    """Name of the env var holding the API key, read at the first API call; null: send no real key (local
    servers that check none)."""
    max_tokens: int = 8192
    """Output tokens per reply."""
    temperature: float | None = None
    """Sampling temperature; null: the server's default (some reasoning models accept no other)."""
    timeout_s: float = 600.0
    """Seconds per API request."""
    max_retries: int = 6
    """Retries of one request after a rate limit (429), overload or server error (5xx), or a connection error."""
    max_connect_retries: int = 2
    """Retries (at most `max_retries`) when no connection could be made at all (connection refused, unknown host):
    a wrong `base_url` or a server that is not up does not fix itself in the minutes the full backoff takes.
    A connection lost mid-request (a reset, a timeout) counts under `max_retries`."""
    backoff_initial_s: float = 2.0
    """First retry wait; it doubles each retry (with jitter) up to `backoff_max_s`. A server's retry-after header
    replaces it (capped at `backoff_max_s`)."""
    backoff_max_s: float = 60.0
    """Longest wait between retries."""
    keep_last_observations: int = 8
    """Context management: the last N tool calls and their observations are sent whole; older observations
    become a note ``[observation of step k trimmed: N chars]`` plus their first `trimmed_head_chars`
    characters, and long string arguments of those older calls (file contents) a similar note. The prompt is
    always sent whole. 0: never trim."""
    trimmed_head_chars: int = 200
    """Characters of a trimmed observation kept after its note."""
    max_nudges: int = 2
    """Replies without a tool call answered by a reminder before the policy submits."""
    system: str = ("You act only through the tools: each tool is one of the actions the task lists, with the "
                   "same fields. Call submit when the kernel is done.")
    """System message sent before the task prompt."""
    prices_as_of: str | None = None
    """The date the price table was read from the provider's pricing page."""
    prices: dict[str, dict[str, float]] = field(default_factory=dict)
    """Model -> {input, output, cached_input, cache_write}: USD per million tokens (see kernelgym.usage)."""


NUDGE = ("Your reply called no tool. Act with one of the tools ({tools}); call submit when the kernel is done.")


class ToolCallingPolicy:
    """The loop an API policy shares (see the module docstring). Subclasses implement `_make_client(api_key)`,
    `_complete(client, history) -> Reply` and `_close_client(client)`; `history` is the conversation as
    `_history_view()` gives it (trimmed), a list of entries:

    - ``{"role": "assistant", "text": str, "calls": [ToolCall]}``: a model reply.
    - ``{"role": "tool", "call": ToolCall, "output": str, "step": int}``: the observation answering a call.
    - ``{"role": "user", "text": str}``: a nudge.

    The prompt (``self.prompt``) and `config.system` come first, untrimmed.
    """

    #: SDK exception classes of connection failures, retried like a 5xx (subclasses set them).
    connection_errors: tuple[type[BaseException], ...] = ()

    def __init__(self, config: ApiPolicyConfig):
        self.config = config
        try:
            self.prices = PriceTable(config.prices, config.prices_as_of)
        except (TypeError, ValueError) as e:
            raise PolicyConfigError(f"{type(self).__name__}: bad price table: {e}") from None
        self._client = None
        self.prompt = ""
        self._history: list[dict[str, Any]] = []
        self._queue: list[ToolCall] = []
        self._handed: ToolCall | None = None
        self._step_info: dict[str, Any] = {}
        self._usage: StepUsage | None = None

    # -- the Policy interface -------------------------------------------------------------------------------------
    def reset(self, observation: dict[str, str], info: dict[str, Any]) -> None:
        """Start a conversation whose first user message is the task prompt. Makes no API call."""
        self.prompt = observation.get("prompt", "")
        self._history, self._queue, self._handed = [], [], None
        self._step_info, self._usage = {}, None

    def act(self, observation: dict[str, str], info: dict[str, Any]) -> dict[str, Any] | str:
        """The next action: the next queued tool call, or a new model reply's first call (submit after
        `max_nudges` replies without one).

        Raises:
            MissingApiKeyError: the key's env var is unset (rollout then submits; the episode is still graded).
            ModelApiError: an API error that is not retried, or still fails after its retries; the message names
                the SDK's error, the base URL and the attempts (the SDK's error is its ``__cause__``).
        """
        if self._handed is not None:
            self._history.append({"role": "tool", "call": self._handed, "output": observation.get("output", ""),
                                  "step": info.get("step")})
            self._handed = None
        if not self._queue:
            self._ask_model()
        if not self._queue:
            self._step_info["note"] = f"no tool call after {self.config.max_nudges} nudges; submitting"
            return {"kind": "submit"}
        self._handed = self._queue.pop(0)
        self._step_info["tool_call"] = self._handed.to_dict()
        return self._handed.action

    def take_step_info(self) -> dict[str, Any]:
        """What the last act() did, for rollout (see kernelgym.policy.Policy): ``usage`` (a StepUsage, present
        when the act called the model), ``tool_call`` ({id, name, arguments}), and when it called the model
        ``text`` (the reply's text) and ``context`` (how many observations went whole and which steps' were
        trimmed). Cleared by the call."""
        out = dict(self._step_info)
        if self._usage is not None:
            out["usage"] = self._usage
        self._step_info, self._usage = {}, None
        return out

    def close(self) -> None:
        """Close the HTTP client; the next episode's first act() opens a new one."""
        if self._client is not None:
            self._close_client(self._client)
            self._client = None

    @staticmethod
    def import_sdk(module: str) -> Any:
        """The SDK module `module`, imported when the policy is built (not when policy.py is read).

        Raises:
            PolicyConfigError: it is not installed; the message says how to install it.
        """
        try:
            return importlib.import_module(module)
        except ImportError as e:
            raise PolicyConfigError(f"the {module} SDK is not installed ({e}): pip install 'kernelgym[agents]' "
                                    f"(or pip install {module})") from None

    # -- subclass hooks ---------------------------------------------------------------------------------------------
    def _make_client(self, api_key: str) -> Any:
        raise NotImplementedError

    def _complete(self, client: Any, history: list[dict[str, Any]]) -> Reply:
        raise NotImplementedError

    def _close_client(self, client: Any) -> None:
        client.close()

    # -- the loop ---------------------------------------------------------------------------------------------------
    def _api_key(self) -> str:
        env = self.config.api_key_env
        if not env:
            return "none"  # a local server that checks no key; the SDKs refuse an empty one
        key = os.environ.get(env, "")
        if not key:
            raise MissingApiKeyError(f"the API key variable {env} is not set: export {env}=<your key>, or name "
                                     f"another variable with api_key_env in the policy config")
        remember_secret(key)  # an SDK error may echo it (a proxy echoing headers); rollout redacts its text
        return key

    def _ask_model(self) -> None:
        for attempt in range(self.config.max_nudges + 1):
            reply = self._call()
            self._history.append({"role": "assistant", "text": reply.text, "calls": reply.calls})
            if reply.text:
                self._step_info["text"] = (self._step_info.get("text", "") + "\n" + reply.text).lstrip("\n")
            if reply.calls:
                self._queue = list(reply.calls)
                return
            if attempt < self.config.max_nudges:
                self._history.append({"role": "user", "text": NUDGE.format(tools=", ".join(TOOL_NAMES))})

    def _call(self) -> Reply:
        """One model reply, retried on rate limits, server and connection errors; its usage is added up."""
        if self._client is None:
            self._client = self._make_client(self._api_key())
        usage = StepUsage(cost_usd=0.0)
        history, self._step_info["context"] = self._history_view()
        start = time.monotonic()
        try:
            for attempt in range(self.config.max_retries + 1):
                try:
                    reply = self._complete(self._client, history)
                    break
                except Exception as e:  # noqa: BLE001 - which errors are retried is _retry_wait's decision
                    wait = self._retry_wait(e, attempt)
                    if wait is None:
                        # Retries are silent (nothing on the console), so the one error that ends the episode
                        # must say what was tried: which server, how often, for how long.
                        raise self._final_error(e, attempt + 1, time.monotonic() - start) from e
                    usage.retries += 1
                    time.sleep(wait)
        finally:
            usage.wall_s = time.monotonic() - start
            self._usage = usage if self._usage is None else self._usage + usage
        reply.usage.api_calls = 1
        self.prices.priced(reply.usage)
        self._usage = self._usage + reply.usage
        return reply

    def _base_url(self) -> str:
        """The API's base URL as the client uses it (the SDK's default or its variable when `base_url` is null)."""
        url = getattr(self._client, "base_url", None) or self.config.base_url
        return str(url).rstrip("/") if url else "(the SDK's default URL)"

    def _final_error(self, error: BaseException, attempts: int, elapsed_s: float) -> Exception:
        """`error` as the episode's final error: a ModelApiError naming the SDK's error, the base URL and the
        attempts; a MissingApiKeyError or other kernelgym error as it is."""
        if isinstance(error, KernelGymError):
            return error
        hint = ""
        if could_not_connect(error):
            hint = "; nothing accepted a connection there: check base_url, and that the server is up"
        elif getattr(error, "status_code", None) in (401, 403):
            hint = f"; check the key in ${self.config.api_key_env}" if self.config.api_key_env else ""
        text = str(error).strip() or "(no message)"
        # parentheses, not square brackets: `kernelgym run` prints the error through rich, which reads [...] as markup
        return ModelApiError(f"{type(error).__name__}: {text} (model {self.config.model!r} at {self._base_url()}: "
                             f"{attempts} attempt{'s' if attempts != 1 else ''} in "
                             f"{elapsed_s:.1f} s{hint})")

    def _retry_wait(self, error: BaseException, attempt: int) -> float | None:
        """Seconds to wait before retrying after `error`, or None if it is not retried (or retries are spent).
        A failure to connect at all gets `max_connect_retries` retries, anything else retryable `max_retries`."""
        status = getattr(error, "status_code", None)
        retryable = isinstance(error, self.connection_errors) or status in (408, 409, 429) or (
            isinstance(status, int) and status >= 500)
        limit = self.config.max_retries
        if isinstance(error, self.connection_errors) and could_not_connect(error):
            limit = min(limit, self.config.max_connect_retries)
        if not retryable or attempt >= limit:
            return None
        wait = min(self.config.backoff_max_s, self.config.backoff_initial_s * 2 ** attempt)
        wait *= 0.5 + random.random() / 2  # jitter: parallel episodes do not retry in lockstep
        headers = getattr(getattr(error, "response", None), "headers", None) or {}
        try:
            retry_after = float(headers.get("retry-after", ""))
        except ValueError:
            retry_after = None
        if retry_after is not None:
            wait = min(self.config.backoff_max_s, max(0.0, retry_after))
        return wait

    def _history_view(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The history with old observations and old calls' long arguments trimmed (see `keep_last_observations`),
        and a note of what was trimmed."""
        keep = self.config.keep_last_observations
        results = [e for e in self._history if e["role"] == "tool"]
        old = results[:-keep] if keep and len(results) > keep else []
        old_ids = {e["call"].id for e in old}
        view = []
        for e in self._history:
            if e["role"] == "tool" and e["call"].id in old_ids:
                n, head = len(e["output"]), e["output"][:self.config.trimmed_head_chars]
                e = {**e, "output": f"[observation of step {e['step']} trimmed: {n} chars]" +
                     (f"\n{head}" if head else "")}
            elif e["role"] == "assistant" and any(c.id in old_ids for c in e["calls"]):
                e = {**e, "calls": [_trim_call(c) if c.id in old_ids else c for c in e["calls"]]}
            view.append(e)
        context = {"observations_whole": len(results) - len(old),
                   "observations_trimmed_steps": [e["step"] for e in old]}
        return view, context


def _trim_call(call: ToolCall, max_chars: int = 500) -> ToolCall:
    """`call` with string arguments over `max_chars` replaced by a note (file contents of old write_file calls)."""
    if not isinstance(call.arguments, dict):
        return call
    args = {k: (f"[argument trimmed: {len(v)} chars]" if isinstance(v, str) and len(v) > max_chars else v)
            for k, v in call.arguments.items()}
    return ToolCall(call.id, call.name, args)


def new_call_id() -> str:
    """An id for a tool call whose server sent none."""
    return f"call_{uuid.uuid4().hex[:12]}"
