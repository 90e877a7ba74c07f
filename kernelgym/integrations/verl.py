"""A verl agent loop over one kernelgym env: ``agent_name: kernelgym_agent`` in a verl dataset row.

`KernelGymAgentLoop` is an ``AgentLoopBase`` (verl 0.9.x, ``verl.experimental.agent_loop``) registered as
``kernelgym_agent``. Its async `run` works token-in/token-out, like verl's ``ToolAgentLoop``:

1. makes the row's env (``extra_info.task``, or the ``kernelgym.task`` config key) and resets it in a thread;
2. renders ``[system, user: the env's prompt]`` with the tokenizer's chat template and the env's actions as tools
   (`kernelgym.agent_tools.openai_tools`), through verl's Continuous Token builder;
3. per turn asks the server manager to generate, decodes one tool call with verl's tool parser
   (``multi_turn.format``, hermes by default), steps the env in a thread (env.step blocks), appends the
   observation as a tool message whose tokens get response_mask 0; a reply with no well-formed tool call gets an
   ``error: ...`` observation as a user message and the episode goes on;
4. ends when the env terminates or truncates, or at the budget (``response_length`` tokens, ``max_assistant_turns``
   or the env's ``max_steps``); an episode stopped by the budget is submitted with ``truncate: true`` so it is
   graded either way.

The returned ``AgentLoopOutput`` carries the arena score as ``reward_score`` (verl then skips its reward model)
and the grade in ``extra_fields["kernelgym"]``. Importing this module needs verl (``pip install 'kernelgym[verl]'``).
"""
from __future__ import annotations

import asyncio
import json
from typing import Any
from uuid import uuid4

try:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
    from verl.experimental.agent_loop.tool_parser import ToolParser
except ImportError as e:  # pragma: no cover - depends on the install
    raise ImportError("kernelgym.integrations.verl needs verl 0.9.x: pip install 'kernelgym[verl]'") from e

from kernelgym.agent_tools import openai_tools, tool_call_to_action
from kernelgym.integrations._common import grade_metrics, make_env

SYSTEM = ("You optimise a GPU kernel. Act only through the tools, one tool call per reply; call submit when the "
          "kernel is done.")
NO_TOOL_CALL = ("error: your reply held no well-formed tool call. Reply with exactly one tool call, e.g. "
                '<tool_call>{"name": "read_file", "arguments": {"path": "kernel.py"}}</tool_call>')


@register("kernelgym_agent")
class KernelGymAgentLoop(AgentLoopBase):
    """verl agent loop playing one kernelgym episode per dataset row (see the module docstring).

    Config (``actor_rollout_ref.rollout``): ``prompt_length``, ``response_length``, ``multi_turn.format`` (tool
    parser, default hermes), ``multi_turn.max_assistant_turns``. Optional top-level ``kernelgym`` block:
    ``task`` (default task), ``run_dir``, ``max_steps``, ``system`` (the system message).
    """

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.pop("tools", None)  # verl passes its configured tools; the env's actions are this loop's tools
        super().__init__(*args, **kwargs)
        multi_turn = self.rollout_config.get("multi_turn", {}) or {}
        self.prompt_length = self.rollout_config.prompt_length
        self.response_length = self.rollout_config.response_length
        self.max_assistant_turns = multi_turn.get("max_assistant_turns") or None
        self.tool_parser = ToolParser.get_tool_parser(multi_turn.get("format") or "hermes", self.tokenizer)
        self.kernelgym_config = dict(self.config.get("kernelgym", {}) or {})
        self.tool_schemas = openai_tools()

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """Play one episode of the row's task.

        Args:
            sampling_params: verl's sampling parameters, passed to the server manager as they are.
            **kwargs: the dataset row's fields; ``extra_info`` may hold ``task``, ``seed``, ``max_steps``.

        Returns:
            AgentLoopOutput: prompt_ids, response_ids and response_mask (1 for generated tokens, 0 for
            observations), reward_score (the arena score), num_turns, extra_fields["kernelgym"] (the grade).

        Raises:
            KeyError: no task in the row's ``extra_info`` nor in the ``kernelgym`` config.
        """
        extra = dict(kwargs.get("extra_info") or {})
        task = extra.get("task") or self.kernelgym_config["task"]
        env_kwargs = {"max_steps": int(extra.get("max_steps") or self.kernelgym_config.get("max_steps", 20))}
        if self.kernelgym_config.get("run_dir"):
            env_kwargs["run_dir"] = self.kernelgym_config["run_dir"]
        env = await asyncio.to_thread(make_env, task, **env_kwargs)
        try:
            return await self._play(env, sampling_params, extra)
        finally:
            await asyncio.to_thread(env.close)

    async def _play(self, env, sampling_params: dict[str, Any], extra: dict[str, Any]) -> AgentLoopOutput:
        obs, _ = await asyncio.to_thread(env.reset, seed=extra.get("seed"))
        messages = [{"role": "system", "content": self.kernelgym_config.get("system", SYSTEM)},
                    {"role": "user", "content": obs["prompt"]}]
        ids = await self.ct_build_initial_tokens(messages, tools=self.tool_schemas)
        mask: list[int] = []
        logprobs: list[float] = []
        reward, done, info, turns, actions = 0.0, False, {}, 0, []
        request_id = uuid4().hex
        while not done:
            output = await self.server_manager.generate(request_id=request_id, prompt_ids=ids,
                                                        sampling_params=sampling_params)
            merged, mask, lp = await self.ct_merge_assistant_token(
                ids, output.token_ids, mask, logprobs if output.log_probs else None,
                assistant_logprobs=output.log_probs or None)
            ids, logprobs, turns = merged.token_ids, lp or logprobs, turns + 1
            content, calls = await self.tool_parser.extract_tool_calls(output.token_ids, None)
            out_of_budget = len(mask) >= self.response_length or bool(
                self.max_assistant_turns and turns >= self.max_assistant_turns)
            if out_of_budget:
                break
            if calls:
                # One action per turn: the env is one workspace, and later calls may depend on this one's output.
                call = calls[0]
                action = tool_call_to_action(call.name, call.arguments)
                actions.append(call.name)
                obs, reward, terminated, truncated, info = await asyncio.to_thread(env.step, action)
                done = terminated or truncated
                messages.append({"role": "assistant", "content": content or "", "tool_calls": [
                    {"type": "function", "function": {"name": call.name, "arguments": _json_args(call.arguments)}}]})
                feedback = {"role": "tool", "content": obs["output"]}
            else:
                messages.append({"role": "assistant", "content": content or ""})
                feedback = {"role": "user", "content": NO_TOOL_CALL}
            # The assistant turn is already in `ids` as generated tokens; only the feedback is rendered and appended.
            before = list(messages)
            messages.append(feedback)
            if done:
                break
            merged, mask, lp = await self.ct_merge_context_msg(before, messages, ids, mask,
                                                               logprobs or None, tools=self.tool_schemas)
            if len(mask) >= self.response_length:
                break
            ids, logprobs = merged.token_ids, lp or logprobs
        if not done:  # the budget ended the episode: grade the kernel as it is
            obs, reward, _, _, info = await asyncio.to_thread(env.step, {"kind": "submit", "truncate": True})
        grade = info.get("grade") or {}
        n_response = len(mask)
        return AgentLoopOutput(
            prompt_ids=ids[: len(ids) - n_response], response_ids=ids[len(ids) - n_response:][: self.response_length],
            response_mask=mask[: self.response_length],
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            reward_score=float(reward), num_turns=2 * turns + 1, metrics={},
            extra_fields={"kernelgym": {**grade_metrics(grade), "actions": actions, "submitted": done, "grade": grade},
                          "turn_scores": [], "tool_rewards": []})


def _json_args(arguments: Any) -> Any:
    """A tool call's arguments as the chat template expects them (a dict), the raw text when not JSON."""
    try:
        return json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return arguments
