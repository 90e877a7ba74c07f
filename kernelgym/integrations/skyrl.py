"""kernelgym tasks for SkyRL: `KernelArenaSkyRLEnv`, a ``skyrl_gym`` ``BaseTextEnv`` (skyrl-gym 0.4).

    import skyrl_gym
    from kernelgym.integrations.skyrl import register
    register()   # skyrl_gym id "kernelgym"
    env = skyrl_gym.make("kernelgym", env_config={"run_dir": "runs"}, extras={"task": "triton-rmsnorm", "seed": 0})
    conversation, metadata = env.init([{"role": "user", "content": "Optimize the kernel."}])
    out = env.step('<tool_call>{"name": "read_file", "arguments": {"path": "kernel.py"}}</tool_call>')

SkyRL's contract (skyrl_gym/envs/base_text_env.py): ``init(prompt)`` returns the first conversation and metadata;
``step(text)`` takes the model's whole reply and returns ``{observations, reward, done, metadata}``, the
observations as chat messages. Constructed as SkyRL's own envs are: ``Cls(env_config, extras)``, `extras` being
the dataset row's env fields.

One reply holds one tool call, in the form Qwen and Hermes models emit, ``<tool_call>{"name": ..., "arguments":
{...}}</tool_call>``, or as the env's own action object, ``{"kind": "shell", "cmd": "..."}``. A reply without
one, or with JSON that does not parse, gets an ``error: ...`` observation and the episode goes on; it counts
against the turn budget. The reward is 0 until the episode ends, then the arena score: on submit, when the env's
`max_steps` / `max_wall_s` are spent, or at `max_turns` (a truncating submit grades the kernel as it stands).

Without a GPU the env runs on Triton's CPU interpreter: nothing is timed and the best score is 120.
"""
from __future__ import annotations

import json
import re
from typing import Any

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as e:  # the one place skyrl-gym is needed: say which extra brings it
    raise ImportError(f"kernelgym.integrations.skyrl needs skyrl-gym ({e}): pip install 'kernelgym[skyrl]'") from e

from kernelgym.integrations._common import grade_metrics, make_env

#: Appended to the task prompt: how a reply carries its one action.
REPLY_FORMAT = ('\n\nReply with exactly one action per turn, as a tool call: <tool_call>{"name": "read_file", '
                '"arguments": {"path": "kernel.py"}}</tool_call>. The names are the action kinds above (shell, '
                'read_file, write_file, edit_file, profile, bench, submit), the arguments their fields. Call submit '
                'when the kernel is done.')

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


class ReplyFormatError(ValueError):
    """The reply holds no tool call the env can read; the message becomes the observation."""


def parse_reply(text: str) -> dict[str, Any]:
    """The env action in a model's reply.

    Args:
        text: the reply: a ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (the first one counts), or an
            action object such as ``{"kind": "shell", "cmd": "ls"}`` (the reply's outermost braces).

    Returns:
        The action dict (``{"kind": name, **arguments}``); the env checks its fields.

    Raises:
        ReplyFormatError: no tool call or action object, JSON that does not parse, or a call without a name or
            with arguments that are not an object.
    """
    match = _TOOL_CALL.search(text)
    payload = match.group(1) if match else text[text.find("{"):text.rfind("}") + 1] if "{" in text else ""
    if not payload:
        raise ReplyFormatError("no tool call in the reply; reply with one, e.g. " + _EXAMPLE)
    try:
        call = json.loads(payload)
    except (ValueError, RecursionError) as e:
        raise ReplyFormatError(f"the tool call is not valid JSON ({e}); e.g. {_EXAMPLE}") from None
    if not isinstance(call, dict):
        raise ReplyFormatError(f"the tool call must be a JSON object, got {type(call).__name__}; e.g. {_EXAMPLE}")
    if "kind" in call and "name" not in call:  # the env's own action object
        return call
    name, arguments = call.get("name"), call.get("arguments", {})
    if isinstance(arguments, str):  # OpenAI-style: the arguments as JSON text
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError) as e:
            raise ReplyFormatError(f"the tool call's arguments are not valid JSON ({e})") from None
    if not isinstance(name, str) or not name:
        raise ReplyFormatError(f'the tool call needs a "name" (an action kind); e.g. {_EXAMPLE}')
    if not isinstance(arguments, dict):
        raise ReplyFormatError(f'the tool call\'s "arguments" must be an object, got {type(arguments).__name__}')
    # "truncate" is the adapter's own signal (the turn budget is spent), never the model's.
    return {"kind": name, **{k: v for k, v in arguments.items() if k not in ("kind", "truncate")}}


_EXAMPLE = '<tool_call>{"name": "shell", "arguments": {"cmd": "python check.py"}}</tool_call>'


class KernelArenaSkyRLEnv(BaseTextEnv):
    """One kernelgym episode as a SkyRL text env.

    Args:
        env_config: a mapping or DictConfig (or None) of `KernelArenaEnv` arguments shared by every episode:
            ``run_dir``, ``max_steps``, ``max_wall_s``, ``sandbox``, ``hardware``, ``command_timeout_s``.
        extras: the dataset row's env fields: ``task`` (env id or name; also read from ``extra_info.task``,
            default triton-rmsnorm), ``seed``, and ``max_turns`` (replies per episode; default the env's max_steps).

    Attributes:
        env: the episode's kernelgym env (made at construction, reset at init).
        grade: the whole grade once the episode is graded, else None.

    Raises:
        UnknownTaskError: the row names no known task.
    """

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None):
        super().__init__()
        config = dict(env_config or {})
        extras = dict(extras or {})
        extra_info = extras.get("extra_info") if isinstance(extras.get("extra_info"), dict) else {}
        self.task = extras.get("task") or extra_info.get("task") or "KernelArena/triton-rmsnorm-v0"
        seed = extras.get("seed", extra_info.get("seed"))
        self.seed = None if seed is None else int(seed)
        config.setdefault("max_steps", 20)
        self.max_turns = int(extras.get("max_turns") or config["max_steps"])
        self.env = make_env(self.task, **config)
        self.grade: dict[str, Any] | None = None
        self._done = False

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Reset the episode; the task prompt joins the conversation.

        Args:
            prompt: the dataset row's conversation (OpenAI message dicts).

        Returns:
            The conversation with the task prompt and the reply format added to its last user message (or as a
            new user message), and metadata ``{"task", "workspace", "max_turns"}``.
        """
        obs, info = self.env.reset(seed=self.seed)
        self.turns, self.grade, self._done = 0, None, False
        text = obs["prompt"] + REPLY_FORMAT
        prompt = [dict(m) for m in (prompt or [])]
        if prompt and prompt[-1].get("role") == "user":
            prompt[-1]["content"] = f"{prompt[-1].get('content') or ''}\n\n{text}".lstrip()
        else:
            prompt.append({"role": "user", "content": text})
        return prompt, {"task": info["task"], "workspace": info["workspace"], "max_turns": self.max_turns}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Run the reply's tool call as one env action.

        Args:
            action: the model's reply text.

        Returns:
            ``observations``: one user message holding the action's output (an ``error: ...`` for a reply without a
            readable tool call); ``reward``: the arena score when the episode ends, else 0; ``done``; ``metadata``:
            the step's info (task, step, action_kind, action_error) and, once graded, the grade's metrics.
        """
        if self._done:
            return BaseTextEnvStepOutput(observations=[], reward=0.0, done=True, metadata={"note": "episode over"})
        self.turns += 1
        try:
            act = parse_reply(action if isinstance(action, str) else str(action))
        except ReplyFormatError as e:
            output, reward, done, info = f"error: {e}", 0.0, False, {"action_kind": "invalid", "action_error": str(e)}
            if self.turns >= self.max_turns:  # the last reply was unreadable: grade the kernel as it stands
                obs, reward, _, _, info = self.env.step({"kind": "submit", "truncate": True})
                output, done = f"{output}\n{obs['output']}", True
        else:
            obs, reward, terminated, truncated, info = self.env.step(act)
            output, done = obs["output"], terminated or truncated
            if not done and self.turns >= self.max_turns:
                obs, reward, _, _, info = self.env.step({"kind": "submit", "truncate": True})
                output, done = f"{output}\n{obs['output']}", True
        metadata = {k: info.get(k) for k in ("task", "step", "action_kind", "action_error") if k in info}
        if done:
            self._done = True
            self.grade = info.get("grade") or None
            metadata.update(grade_metrics(self.grade))
        return BaseTextEnvStepOutput(observations=[{"role": "user", "content": output}], reward=float(reward),
                                     done=done, metadata=metadata)

    def get_metrics(self) -> dict[str, Any]:
        """The episode's grade as numbers SkyRL averages: score, compiled, correct, and speedup where timed."""
        m = grade_metrics(self.grade)
        out = {k: float(m[k]) for k in ("score", "compiled", "correct") if k in m}
        if m.get("speedup") is not None:
            out["speedup"] = float(m["speedup"])
        return out

    def close(self) -> None:
        """Close the kernelgym env (its grader worker). Idempotent."""
        env, self.env = getattr(self, "env", None), None
        if env is not None:
            env.close()

    def __del__(self):
        # The last resort when a trainer drops the env without close().
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have torn down what close needs
            pass


def register(env_id: str = "kernelgym") -> None:
    """Register `KernelArenaSkyRLEnv` with skyrl_gym as `env_id` (SkyRL datasets name it in ``env_class``).

    Args:
        env_id: the skyrl_gym id; registering it twice is a no-op.
    """
    import skyrl_gym

    if env_id not in skyrl_gym.registry:
        skyrl_gym.register(id=env_id, entry_point=f"{__name__}:KernelArenaSkyRLEnv")
