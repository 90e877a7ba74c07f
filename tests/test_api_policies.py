"""The policy interface's accounting and the API policies (anthropic, openai) against fake servers on loopback.

No network and no real key: every API call goes to tests/fakes/api_servers.py on 127.0.0.1. Most tests drive the
policies through `rollout` on `StubEnv` (the real action parsing, no sandbox or grading), so they take
milliseconds; two run a whole graded episode through `kernelgym run` on the CPU interpreter.
"""
import json
import os
import subprocess
import sys
import time

import gymnasium as gym
import pytest
from fakes.api_servers import (anthropic_reply, fake_anthropic, fake_openai, openai_reply, rate_limited,
                               server_error)

from kernelgym.agent_tools import (TOOLS, anthropic_tools, openai_response_tools, openai_tools,
                                   tool_call_to_action)
from kernelgym.cli import main
from kernelgym.policy import load_policy, policy_requirements, DEFAULT_POLICIES_ROOT
from kernelgym.rollout import rollout
from kernelgym.spaces import ACTION_KINDS, ActionError, action_space, observation_space, parse_action
from kernelgym.usage import PriceTable, StepUsage, episode_totals
from kernelgym.wrappers import TrajectoryRecorder

FAKE_KEY = "sk-fake-kernelgym-test-key-0123456789"
FAST = {"backoff_initial_s": 0.01, "backoff_max_s": 0.05}


class StubEnv(gym.Env):
    """The env's action parsing without a workspace: each action's output names it (plus `pad` characters);
    a malformed one gives the env's ``error: ...``; submit ends the episode with reward 1."""

    metadata = {"render_modes": []}

    def __init__(self, pad: int = 0, max_steps: int = 20):
        self.observation_space, self.action_space = observation_space(), action_space()
        self.pad, self.max_steps, self.steps = pad, max_steps, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return {"output": "", "prompt": "THE TASK PROMPT"}, {"step": 0, "grade": {}}

    def step(self, action):
        self.steps += 1
        try:
            act = parse_action(action)
            kind, output = act.kind, f"did {act.kind} {act.cmd or act.path}" + "." * self.pad
        except ActionError as e:
            kind, output = "invalid", f"error: {e}"
        done = kind == "submit"
        info = {"step": self.steps, "grade": {"score": 1.0} if done else {}}
        return {"output": output, "prompt": ""}, float(done), done, self.steps >= self.max_steps, info


def _sent_key(request):
    """The API key a request carried (SDK versions differ: x-api-key, or an Authorization bearer token)."""
    return request["headers"].get("x-api-key") or request["headers"].get("authorization", "").removeprefix("Bearer ")


def _trajectory(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- tools ----------------------------------------------------------------------------------------------------------
def test_tools_are_the_action_kinds_in_every_sdk_form():
    assert sorted(t["name"] for t in TOOLS) == sorted(ACTION_KINDS)
    assert [t["name"] for t in anthropic_tools()] == [t["function"]["name"] for t in openai_tools()] == \
        [t["name"] for t in openai_response_tools()]
    assert all(t["input_schema"]["type"] == "object" for t in anthropic_tools())
    assert openai_tools()[0]["function"]["parameters"] == TOOLS[0]["input_schema"]
    # A call with exactly the schema's required fields is an action the env accepts.
    sample = {"cmd": "ls", "path": "kernel.py", "content": "x", "old": "a", "new": "b"}
    for tool in TOOLS:
        args = {k: sample[k] for k in tool["input_schema"]["required"]}
        assert parse_action(tool_call_to_action(tool["name"], args)).kind == tool["name"]


@pytest.mark.parametrize("name, arguments, error", [
    ("shell", '{"cmd": "ls"', "not valid JSON"),                # cut-off JSON text
    ("shell", "[1, 2]", "must be a dict or a JSON object"),     # JSON, not an object
    ("shell", 7, "must be a dict or a JSON object"),
    ("shell", {"command": "ls"}, r"unknown action field\(s\) 'command'"),  # a wrong field name
    ("write_file", {"path": "k.py", "content": 5}, "'content' must be a string"),
    ("rm_rf", {}, "unknown action kind 'rm_rf'"),               # no such tool
    ("profile", {"config": "zero"}, "'config' must be a non-negative integer"),
])
def test_malformed_tool_calls_become_env_errors_not_crashes(name, arguments, error):
    with pytest.raises(ActionError, match=error):
        parse_action(tool_call_to_action(name, arguments))


def test_tool_arguments_cannot_change_the_kind():
    assert tool_call_to_action("read_file", {"kind": "shell", "path": "a"}) == {"kind": "read_file", "path": "a"}
    assert tool_call_to_action("submit", None) == tool_call_to_action("submit", "") == {"kind": "submit"}


@pytest.mark.parametrize("name", [t["name"] for t in TOOLS])
def test_tool_arguments_cannot_end_the_episode_truncated(name):
    """``truncate`` is the policy's "the agent stopped" signal: a model that sends it (in any tool's arguments, as
    a dict or as JSON text) gets its call without it, and never a truncated submit."""
    for args in ({"truncate": True, "kind": "submit"}, json.dumps({"truncate": True, "kind": "submit"})):
        action = tool_call_to_action(name, args)
        assert action == {"kind": name}
        if name == "submit":
            assert not parse_action(action).truncate


def test_model_sent_truncate_does_not_truncate_the_episode(monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    with fake_anthropic([anthropic_reply("", [("submit", {"truncate": True})])]) as server:
        env = TrajectoryRecorder(StubEnv(), tmp_path / "t.jsonl")
        rollout(env, load_policy("anthropic", base_url=server.base_url, **FAST))
    (step,) = [x for x in _trajectory(tmp_path / "t.jsonl") if x["event"] == "step"]
    assert step["action"] == {"kind": "submit"}
    assert step["policy"]["tool_call"]["arguments"] == {"truncate": True}  # what the model sent, kept as a record


def test_api_key_echoed_in_an_error_is_redacted(monkeypatch, tmp_path):
    """A server (or proxy) that quotes the request's headers in its error body: the key does not reach the
    result's policy_error (results.json)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    echo = (400, {"type": "error", "error": {"type": "invalid_request_error",
                                             "message": f"bad request; headers were x-api-key: {FAKE_KEY}"}}, {})
    with fake_anthropic([echo]) as server:
        result = rollout(StubEnv(), load_policy("anthropic", base_url=server.base_url, **FAST))
    assert "BadRequestError" in result["policy_error"] and "x-api-key: [redacted]" in result["policy_error"]
    assert FAKE_KEY not in result["policy_error"]


def test_openai_cached_beyond_prompt_tokens_counts_zero_input(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with fake_openai([openai_reply(calls=[("submit", {})], prompt_tokens=100, cached=150)]) as server:
        result = rollout(StubEnv(), load_policy("openai", base_url=server.base_url, **FAST))
    assert (result["usage"]["input_tokens"], result["usage"]["cached_tokens"]) == (0, 150)


# -- usage and prices -----------------------------------------------------------------------------------------------
def test_price_table_costs_dated_ids_and_leaves_unknown_models_unpriced():
    table = PriceTable({"m": {"input": 3.0, "output": 15.0, "cached_input": 0.3, "cache_write": 3.75}}, "2025-11-24")
    u = table.priced(StepUsage(input_tokens=1_000_000, output_tokens=100_000, cached_tokens=2_000_000,
                               cache_write_tokens=1_000_000, model="m-20250929"))
    assert u.cost_usd == pytest.approx(3.0 + 1.5 + 0.6 + 3.75) and u.note is None
    assert table.lookup("m-2025-08-07") and table.lookup("m-latest") and table.lookup("m-2") is None
    unknown = table.priced(StepUsage(input_tokens=10, model="my-local-model"))
    assert unknown.cost_usd is None and "no price for model 'my-local-model'" in unknown.note and "2025-11-24" in unknown.note
    assert (u + unknown).cost_usd is None and (u + unknown).input_tokens == 1_000_010  # unknown stays unknown
    no_cached_rate = PriceTable({"m": {"input": 1.0, "output": 2.0}}, None)
    assert no_cached_rate.cost(StepUsage(cached_tokens=1_000_000, model="m"))[0] == 1.0  # billed as input
    with pytest.raises(ValueError, match="input and output"):
        PriceTable({"m": {"input": 1.0}}, None)


def test_episode_totals_sum_reported_steps():
    steps = [StepUsage(input_tokens=5, output_tokens=1, cost_usd=0.5, api_calls=1, wall_s=2.0, model="a"), None,
             StepUsage(input_tokens=7, cached_tokens=3, cost_usd=0.25, retries=2, api_calls=1, model="a")]
    t = episode_totals(steps, policy_wall_s=4.0)
    assert (t["input_tokens"], t["output_tokens"], t["cached_tokens"], t["cost_usd"]) == (12, 1, 3, 0.75)
    assert (t["api_calls"], t["retries"], t["api_wall_s"], t["policy_wall_s"]) == (2, 2, 2.0, 4.0)
    none = episode_totals([None, None], policy_wall_s=1.0)
    assert none["input_tokens"] is None and none["cost_usd"] is None and none["policy_wall_s"] == 1.0


# -- rollout: step info, trajectory, close --------------------------------------------------------------------------
class ReportingPolicy:
    """Two shell steps then submit; reports 10 input tokens per act; fails at act `fail_at` if given."""

    def __init__(self, fail_at=None):
        self.fail_at, self.closed, self.n = fail_at, 0, 0

    def reset(self, observation, info):
        self.n = 0

    def act(self, observation, info):
        self.n += 1
        if self.n == self.fail_at:
            raise RuntimeError("boom")
        return {"kind": "shell", "cmd": f"echo {self.n}"} if self.n < 3 else {"kind": "submit"}

    def take_step_info(self):
        return {"usage": StepUsage(input_tokens=10, cost_usd=0.001, api_calls=1, model="m").to_dict(),
                "tool_call": {"name": "shell", "n": self.n}}

    def close(self):
        self.closed += 1


def test_rollout_puts_policy_step_info_in_info_trajectory_and_totals(tmp_path):
    env = gym.Wrapper(TrajectoryRecorder(StubEnv(), tmp_path / "t.jsonl"))  # the recorder under another wrapper
    policy, seen = ReportingPolicy(), []
    result = rollout(env, policy, seed=0, on_step=lambda step, action, info: seen.append(info["policy"]))
    assert result["reward"] == 1.0 and result["steps"] == 3 and policy.closed == 1
    assert [s["tool_call"]["n"] for s in seen] == [1, 2, 3] and all(s["act_wall_s"] >= 0 for s in seen)
    steps = [x for x in _trajectory(tmp_path / "t.jsonl") if x["event"] == "step"]
    assert [x["policy"]["usage"]["input_tokens"] for x in steps] == [10, 10, 10]
    assert steps[0]["policy"]["tool_call"] == {"name": "shell", "n": 1}
    u = result["usage"]
    assert u["input_tokens"] == 30 and u["cost_usd"] == pytest.approx(0.003) and u["api_calls"] == 3
    assert u["policy_wall_s"] >= 0


def test_rollout_closes_a_failing_policy_and_grades_anyway(tmp_path):
    policy = ReportingPolicy(fail_at=2)
    result = rollout(StubEnv(), policy)
    assert result["policy_error"] == "policy error: RuntimeError: boom" and result["terminated"]
    assert policy.closed == 1 and result["usage"]["input_tokens"] == 20  # the failed act's usage still counts


class FailingResetPolicy(ReportingPolicy):
    """A policy whose reset() raises, as a CLI policy does without its key or binary."""

    def reset(self, observation, info):
        raise RuntimeError("no key here")


def test_rollout_treats_a_failing_reset_like_a_failing_act(tmp_path):
    """An exception from reset() is the episode's policy_error, the kernel is submitted as it stands and graded,
    act() is never called, and close() still runs."""
    policy = FailingResetPolicy()
    result = rollout(StubEnv(), policy)
    assert result["policy_error"] == "policy error: RuntimeError: no key here"
    assert result["terminated"] and result["steps"] == 1 and policy.n == 0 and policy.closed == 1


def test_policy_error_reported_in_step_info_is_the_episode_error():
    """A policy that gives up without raising (a CLI that exited or timed out) names why in its step info."""
    class GivesUp(ReportingPolicy):
        def act(self, observation, info):
            return {"kind": "submit", "truncate": True}

        def take_step_info(self):
            return {"policy_error": "cli timed out after 9 s: API error 529"}
    result = rollout(StubEnv(), GivesUp())
    assert result["policy_error"] == "policy error: cli timed out after 9 s: API error 529"


def test_policies_without_usage_report_none():
    result = rollout(StubEnv(), load_policy("scripted", actions=[{"kind": "shell", "cmd": "ls"}]))
    assert result["steps"] == 2 and result["usage"]["input_tokens"] is None and result["usage"]["cost_usd"] is None


# -- the API policies on the stub env ---------------------------------------------------------------------------------
def test_missing_key_is_a_policy_error_naming_the_variable(monkeypatch):
    monkeypatch.delenv("KG_TEST_UNSET_KEY", raising=False)
    with fake_anthropic([]) as server:
        policy = load_policy("anthropic", base_url=server.base_url, api_key_env="KG_TEST_UNSET_KEY")
        result = rollout(StubEnv(), policy)
    assert "MissingApiKeyError" in result["policy_error"] and "KG_TEST_UNSET_KEY is not set" in result["policy_error"]
    assert result["terminated"] and server.requests == []  # submitted without calling the API


def test_anthropic_retries_5xx_queues_calls_nudges_and_sends_the_key(monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    script = [server_error(500), server_error(529),
              anthropic_reply("Looking.", [("read_file", {"path": "kernel.py"}), ("shell", {"cmd": "ls"})],
                              input_tokens=1000, output_tokens=50, cache_write=800),
              anthropic_reply("All good, I think."),  # no tool call: nudged
              anthropic_reply("", [("submit", {})], input_tokens=20, output_tokens=5, cache_read=1800)]
    with fake_anthropic(script) as server:
        policy = load_policy("anthropic", base_url=server.base_url, **FAST)
        env = TrajectoryRecorder(StubEnv(), tmp_path / "t.jsonl")
        result = rollout(env, policy)
        assert policy._client is None  # closed at the end of the episode
    assert result["policy_error"] is None and result["steps"] == 3 and result["reward"] == 1.0
    assert len(server.requests) == 5 and all(_sent_key(r) == FAKE_KEY for r in server.requests)
    body = server.requests[3]["body"]  # the request after both queued calls ran
    assert body["messages"][0]["content"][0]["text"] == "THE TASK PROMPT"
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    results = body["messages"][2]["content"]
    assert [(b["type"], b["tool_use_id"], b["content"]) for b in results] == [
        ("tool_result", "toolu_read_file_0", "did read_file kernel.py"), ("tool_result", "toolu_shell_1", "did shell ls")]
    assert "called no tool" in server.requests[4]["body"]["messages"][-1]["content"][0]["text"]
    assert {t["name"] for t in body["tools"]} == set(ACTION_KINDS) and body["model"] == "claude-sonnet-4-5"
    steps = [x for x in _trajectory(tmp_path / "t.jsonl") if x["event"] == "step"]
    assert [x["action"]["kind"] for x in steps] == ["read_file", "shell", "submit"]
    assert steps[0]["policy"]["usage"]["retries"] == 2 and steps[0]["policy"]["usage"]["api_calls"] == 1
    assert "usage" not in steps[1]["policy"] and steps[1]["policy"]["tool_call"]["id"] == "toolu_shell_1"
    assert steps[2]["policy"]["usage"]["api_calls"] == 2 and steps[2]["policy"]["text"] == "All good, I think."
    u = result["usage"]
    assert (u["input_tokens"], u["output_tokens"], u["cached_tokens"], u["cache_write_tokens"]) == (1120, 65, 1800, 800)
    assert u["cost_usd"] == pytest.approx((1120 * 3 + 65 * 15 + 1800 * 0.3 + 800 * 3.75) / 1e6)
    assert u["model"] == "claude-sonnet-4-5-20250929" and u["retries"] == 2


class _StatusError(Exception):
    def __init__(self, status, headers=None):
        self.status_code, self.response = status, type("R", (), {"headers": headers or {}})()


def test_backoff_doubles_with_jitter_caps_and_follows_retry_after():
    policy = load_policy("openai", backoff_initial_s=1.0, backoff_max_s=5.0, max_retries=4)
    waits = [policy._retry_wait(_StatusError(429), attempt) for attempt in range(4)]
    for attempt, wait in enumerate(waits):
        full = min(5.0, 2.0 ** attempt)
        assert full / 2 <= wait <= full  # jitter keeps it within half of the full wait
    assert policy._retry_wait(_StatusError(503), 4) is None  # retries spent
    assert policy._retry_wait(_StatusError(429, {"retry-after": "3"}), 0) == 3.0
    assert policy._retry_wait(_StatusError(429, {"retry-after": "120"}), 0) == 5.0  # capped
    assert policy._retry_wait(_StatusError(400), 0) is None and policy._retry_wait(ValueError("x"), 0) is None


def test_connection_errors_are_retried(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with fake_openai([]) as server:  # closed at once: nothing listens on its port any more
        pass
    result = rollout(StubEnv(), load_policy("openai", base_url=server.base_url, max_retries=2, **FAST))
    assert "APIConnectionError" in result["policy_error"] and result["usage"]["retries"] == 2


def test_wrong_base_url_fails_fast_naming_the_url_and_attempts(monkeypatch):
    """The README's local-server example with no server listening: with the default retry settings the episode
    ends within seconds (a refused connection gets max_connect_retries, not the full backoff), and the error
    names the URL, the attempts and what to check."""
    with fake_openai([]) as server:  # closed at once: nothing listens on its port any more
        pass
    url = server.base_url + "/v1"
    start = time.monotonic()
    result = rollout(StubEnv(), load_policy("openai", base_url=url, model="my-model", api_key_env=None))
    assert time.monotonic() - start < 10
    error = result["policy_error"]
    assert "ModelApiError: APIConnectionError" in error and url in error and "3 attempts" in error, error
    assert "check base_url" in error and result["usage"]["retries"] == 2


def test_api_errors_that_are_not_retried_or_outlast_the_retries_end_the_episode(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    unauthorized = (401, {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}, {})
    with fake_anthropic([unauthorized]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)  # base_url null: the SDK's variable
        result = rollout(StubEnv(), load_policy("anthropic", base_url=None, **FAST))
    assert "AuthenticationError" in result["policy_error"] and len(server.requests) == 1
    with fake_anthropic([rate_limited(), rate_limited()]) as server:
        result = rollout(StubEnv(), load_policy("anthropic", base_url=server.base_url, max_retries=1, **FAST))
    assert "RateLimitError" in result["policy_error"] and len(server.requests) == 2
    assert result["usage"]["retries"] == 1 and result["usage"]["api_calls"] == 0


def test_openai_trims_old_observations_and_feeds_back_malformed_calls(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    big = "B" * 5000
    script = [openai_reply(calls=[("write_file", {"path": "kernel.py", "content": big})], cached=0),
              openai_reply(calls=[("shell", '{"cmd": "python check.py"')]),  # malformed JSON arguments
              openai_reply(calls=[("read_file", {"path": "kernel.py"})], prompt_tokens=300, cached=200),
              openai_reply(calls=[("submit", {})])]
    with fake_openai(script) as server:
        policy = load_policy("openai", base_url=server.base_url, keep_last_observations=1, **FAST)
        result = rollout(TrajectoryRecorder(StubEnv(pad=3000), tmp_path / "t.jsonl"), policy)
    assert result["policy_error"] is None and result["steps"] == 4
    assert _sent_key(server.requests[0]) == FAKE_KEY
    first = server.requests[0]["body"]
    assert first["messages"][:2] == [{"role": "system", "content": policy.config.system},
                                     {"role": "user", "content": "THE TASK PROMPT"}]
    assert first["tools"] == openai_tools() and first["max_completion_tokens"] == policy.config.max_tokens
    second = server.requests[1]["body"]["messages"]
    assert json.loads(second[2]["tool_calls"][0]["function"]["arguments"])["content"] == big  # not yet trimmed
    last = server.requests[3]["body"]["messages"]
    tools = [m["content"] for m in last if m["role"] == "tool"]
    assert tools[0].startswith("[observation of step 1 trimmed: 3024 chars]\ndid write_file kernel.py")
    assert tools[1].startswith("[observation of step 2 trimmed:") and "not valid JSON" in tools[1]
    assert tools[2] == "did read_file kernel.py" + "." * 3000  # the last one whole
    assert json.loads(last[2]["tool_calls"][0]["function"]["arguments"])["content"] == "[argument trimmed: 5000 chars]"
    assert last[4]["tool_calls"][0]["function"]["arguments"] == '{"cmd": "python check.py"'  # sent back as it came
    assert last[1]["content"] == "THE TASK PROMPT"
    steps = [x for x in _trajectory(tmp_path / "t.jsonl") if x["event"] == "step"]
    assert steps[1]["action"] == '{"cmd": "python check.py"' and steps[1]["observation"]["output"].startswith("error:")
    assert steps[3]["policy"]["context"] == {"observations_whole": 1, "observations_trimmed_steps": [1, 2]}
    u = result["usage"]
    assert (u["input_tokens"], u["cached_tokens"], u["output_tokens"]) == (100 + 100 + 100 + 100, 200, 40)
    assert u["cost_usd"] == pytest.approx((400 * 1.25 + 200 * 0.125 + 40 * 10) / 1e6)


def test_openai_unpriced_local_model_nudges_then_submits_and_reuses_after_close(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server: api_key_env null needs no key
    script = [openai_reply("thinking", model="my-local-model")] * 3 + [openai_reply(calls=[("submit", {})],
                                                                                    model="my-local-model")]
    with fake_openai(script) as server:
        policy = load_policy("openai", base_url=server.base_url, model="my-local-model", api_key_env=None, **FAST)
        first = rollout(StubEnv(), policy)
        second = rollout(StubEnv(), policy)  # a new episode after close(): a new client, a new conversation
    assert first["steps"] == 1 and first["usage"]["api_calls"] == 3  # reply + 2 nudges, then submit
    assert first["usage"]["cost_usd"] is None and "no price for model 'my-local-model'" in first["usage"]["note"]
    assert second["steps"] == 1 and second["usage"]["api_calls"] == 1 and second["policy_error"] is None
    assert [m["role"] for m in server.requests[3]["body"]["messages"]] == ["system", "user"]  # fresh history
    assert server.requests[2]["body"]["messages"][-1]["content"].startswith("Your reply called no tool")


# -- the command line: list, and a whole graded episode per SDK -------------------------------------------------------
def test_list_shows_what_each_policy_needs(capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert policy_requirements(DEFAULT_POLICIES_ROOT / "anthropic") == ["env:ANTHROPIC_API_KEY", "python:anthropic"]
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "│ anthropic" in line)
    assert "env:ANTHROPIC_API_KEY (missing)" in row
    assert "env:OPENAI_API_KEY" in next(line for line in out.splitlines() if "│ openai" in line)
    assert "│ tuner " in out and "built-in" in out


@pytest.mark.parametrize("policy", ["anthropic", "openai"])
def test_kernelgym_run_whole_episode_against_fake_server(policy, tmp_path, require_bwrap):
    read, check = ("read_file", {"path": "kernel.py"}), ("shell", {"cmd": "python check.py"})
    if policy == "anthropic":
        script = [rate_limited(), anthropic_reply("Reading and checking.", [read, check], input_tokens=1000,
                                                  output_tokens=40, cache_write=3000),
                  anthropic_reply("", [("submit", {})], input_tokens=2500, output_tokens=10, cache_read=3000)]
        server, key_env, model = fake_anthropic(script), "ANTHROPIC_API_KEY", "claude-sonnet-4-5"
        cost_usd = (3500 * 3.0 + 50 * 15.0 + 3000 * 0.3 + 3000 * 3.75) / 1e6
    else:
        script = [rate_limited(), openai_reply("Reading and checking.", [read, check], prompt_tokens=4000,
                                               completion_tokens=40),
                  openai_reply("", [("submit", {})], prompt_tokens=5500, completion_tokens=10, cached=3500)]
        server, key_env, model = fake_openai(script), "OPENAI_API_KEY", "gpt-5"
        cost_usd = (6000 * 1.25 + 50 * 10.0 + 3500 * 0.125) / 1e6
    overrides = json.dumps({"base_url": server.base_url, **FAST})
    env = {**os.environ, key_env: FAKE_KEY}
    with server:
        proc = subprocess.run([sys.executable, "-m", "kernelgym.cli", "run", "--task", "triton-rmsnorm",
                               "--policy", policy, "--policy-config", overrides, "--run-dir", str(tmp_path)],
                              capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(server.requests) == 3 and server.requests[0]["body"]["model"] == model  # 429, then two replies
    (run_dir,) = tmp_path.iterdir()
    results = json.loads((run_dir / "results.json").read_text())
    assert results[0]["reward"] == 120.0 and results[0]["policy_error"] is None
    usage = results[0]["usage"]
    assert usage["retries"] == 1 and usage["api_calls"] == 2 and usage["cost_usd"] == pytest.approx(cost_usd)
    assert usage["input_tokens"] + usage["cached_tokens"] + usage["cache_write_tokens"] == 9500
    lines = _trajectory(run_dir / "trajectories.jsonl")
    steps = [x for x in lines if x["event"] == "step"]
    assert [x["action"] for x in steps] == [{"path": "kernel.py", "kind": "read_file"},
                                            {"cmd": "python check.py", "kind": "shell"}, {"kind": "submit"}]
    assert [x["policy"]["tool_call"]["name"] for x in steps] == ["read_file", "shell", "submit"]
    assert steps[0]["policy"]["usage"]["retries"] == 1 and steps[0]["policy"]["text"] == "Reading and checking."
    assert "CHECK correct=" in steps[1]["observation"]["output"] and steps[-1]["reward"] == 120.0
    # The model got the arena's eight-part prompt, the hardware reference included, as its first user message.
    first = server.requests[1]["body"]["messages"]
    prompt = first[0]["content"][0]["text"] if policy == "anthropic" else first[1]["content"]
    for heading in ("# Task KernelArena/triton-rmsnorm-v0", "## Files", "## Task", "## Architecture pre-check",
                    "## Completion rules", "## Language", "## Hardware: ", "## Workspace", "## How to work"):
        assert heading in prompt
    # The model saw each observation as its tool's result.
    sent = json.dumps(server.requests[2]["body"])
    assert "CHECK correct=" in sent and "triton.jit" in sent
    # The key went in the request headers only: nowhere on disk, nowhere in the output.
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert FAKE_KEY.encode() not in path.read_bytes(), path
    assert FAKE_KEY not in proc.stdout + proc.stderr
    table_row = next(line for line in proc.stdout.splitlines() if "120.0" in line and "True" in line)
    assert f"{cost_usd:.4f}" in table_row and "/50/" in table_row  # the cost and output tokens in the result table
