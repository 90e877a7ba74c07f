"""Coding-agent CLIs as policies, whole episodes with no network and no real key: the real Claude Code and Codex
CLIs (installed by .ci/setup from npm) against fake model servers on loopback that script their tool calls
(tests/fakes/cli_servers.py), and Cursor's launcher with a stand-in executable (tests/fakes/cursor_agent_standin.py).
Each shows tool calls -> env steps -> graded reward -> trajectory and transcript on disk, with token counts."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the agents extra is not installed: pip install -e '.[agents]' (.ci/setup does)")

from kernelgym.agent_tools import MissingApiKeyError  # noqa: E402
from kernelgym.agents.launcher import MissingBinaryError, locate_binary  # noqa: E402
from kernelgym.env import KernelArenaEnv  # noqa: E402
from kernelgym.policy import load_policy  # noqa: E402
from kernelgym.rollout import rollout  # noqa: E402
from kernelgym.wrappers import TrajectoryRecorder  # noqa: E402

from tests.fakes.cli_servers import FakeAnthropic, FakeOpenAI  # noqa: E402

FAKE_KEY = "sk-fake-kernelgym-test-key-0123456789"
SCRIPT = [("read_file", {"path": "kernel.py"}), ("shell", {"cmd": "python check.py"}), ("submit", {})]
STANDIN = Path(__file__).parent / "fakes" / "cursor_agent_standin.py"


def require_cli(name: str) -> str:
    """The CLI's path. Missing: a failure in CI (where .ci/setup installs it), a skip elsewhere."""
    path = locate_binary(name)
    if path is None:
        message = f"{name} is not installed: run `bash .ci/setup --agents`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def run_cli(policy: str, config: dict, run_dir: Path, key_env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, key_env: FAKE_KEY}
    return subprocess.run([sys.executable, "-m", "kernelgym.cli", "run", "--task", "triton-rmsnorm", "--policy", policy,
                           "--policy-config", json.dumps(config), "--run-dir", str(run_dir),
                           "--hardware", "cpu-interpreter"],
                          capture_output=True, text=True, timeout=300, env=env)


def check_run(run_dir: Path, script=SCRIPT):
    """Assert the run's results, trajectory and transcript; return (trajectory records, transcript events)."""
    (run,) = [p for p in run_dir.iterdir() if p.is_dir()]
    results = json.loads((run / "results.json").read_text())
    assert results[0]["reward"] == 120.0 and results[0]["terminated"] and not results[0]["truncated"]
    lines = [json.loads(x) for x in (run / "trajectories.jsonl").read_text().splitlines()]
    steps = [x for x in lines if x["event"] == "step"]
    prompt = lines[0]["observation"]["prompt"]
    assert "Hardware" in prompt or "hardware" in prompt
    assert [s["action"] for s in steps] == [{**args, "kind": name} for name, args in script]
    assert [s["policy"]["tool_call"]["name"] for s in steps] == [name for name, _ in script]
    assert "def " in steps[0]["observation"]["output"]  # kernel.py's text came back as the read_file result
    assert steps[-1]["reward"] == 120.0 and steps[-1]["info"]["grade"]["score"] == 120.0
    tokens = sum(s["policy"]["usage"]["input_tokens"] + s["policy"]["usage"]["output_tokens"] for s in steps)
    assert tokens == results[0]["usage"]["input_tokens"] + results[0]["usage"]["output_tokens"] > 0
    (transcript,) = (run / "agent_transcripts").glob("*.jsonl")
    events = [json.loads(x) for x in transcript.read_text().splitlines() if x.startswith("{")]
    summary = json.loads(transcript.with_suffix(".summary.json").read_text())
    assert summary["ending"] == "submitted" and summary["exit_code"] == 0
    for f in run.rglob("*"):
        if f.is_file() and f.suffix in (".json", ".jsonl", ".log"):
            assert FAKE_KEY not in f.read_text(errors="replace"), f"the API key leaked into {f}"
    return steps, events, results[0], prompt


def strings(tree) -> list[str]:
    """Every string in a JSON value."""
    if isinstance(tree, str):
        return [tree]
    if isinstance(tree, dict):
        tree = list(tree.values())
    return [s for item in tree for s in strings(item)] if isinstance(tree, list) else []


def gave_prompt(request_body: dict, prompt: str) -> bool:
    """Whether the request carries the env's whole task prompt (and the iteration guidance) in one message."""
    return any(prompt.strip() in s and "submit tool" in s for s in strings(request_body))


def test_claude_code_whole_episode(tmp_path, require_bwrap):
    require_cli("claude")
    with FakeAnthropic(SCRIPT, input_tokens=1000, output_tokens=50) as fake:
        proc = run_cli("claude-code", {"base_url": fake.base_url, "model": "claude-sonnet-4-5", "timeout_s": 120},
                       tmp_path / "runs", "ANTHROPIC_API_KEY")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        steps, events, result, prompt = check_run(tmp_path / "runs")
        main = fake.tool_requests()
    assert gave_prompt(main[0]["body"], prompt)
    # Claude Code offered the model the kernelgym MCP tools and none of its own, and sent the key it was given
    offered = {t["name"] for t in main[0]["body"]["tools"]}
    assert offered == {f"mcp__kernelgym__{n}" for n in ("shell", "read_file", "write_file", "edit_file", "profile",
                                                       "bench", "submit")}
    assert all(r["headers"].get("x-api-key") == FAKE_KEY for r in main)
    # four model replies (three tool calls and a closing message): the CLI's totals are the episode's
    assert result["usage"]["input_tokens"] == 4000 and result["usage"]["output_tokens"] == 200
    assert result["usage"]["api_calls"] == 4
    # each reply's tokens are on the step of its tool call; the closing reply's on the submit step
    assert [s["policy"]["usage"]["input_tokens"] for s in steps] == [1000, 1000, 2000]
    # priced from the config's table (claude-sonnet-4-5: $3 in, $15 out per million); Claude Code's own estimate
    # for the session, from its result event, is kept beside it
    assert result["usage"]["cost_usd"] == pytest.approx(4000 * 3e-6 + 200 * 15e-6)
    assert steps[-1]["policy"]["cli_reported_cost_usd"] == events[-1]["total_cost_usd"]
    assert events[-1]["type"] == "result" and events[-1]["usage"]["output_tokens"] == 200


def test_codex_whole_episode(tmp_path, require_bwrap):
    require_cli("codex")
    with FakeOpenAI(SCRIPT, input_tokens=1000, output_tokens=50, cached_tokens=400) as fake:
        proc = run_cli("codex", {"base_url": fake.base_url + "/v1", "model": "gpt-5-codex", "timeout_s": 120},
                       tmp_path / "runs", "OPENAI_API_KEY")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        steps, events, result, prompt = check_run(tmp_path / "runs")
        main = fake.tool_requests()
    assert gave_prompt(main[0]["body"], prompt)
    # Codex's own shell, patch, image and web tools were off: besides kernelgym's namespace, only the MCP resource
    # tools (which reach kernelgym's server alone) and plan mode's question tool were offered
    offered = {t.get("name") for t in main[0]["body"]["tools"]}
    assert "mcp__kernelgym" in offered
    assert not offered & {"shell", "exec_command", "apply_patch", "view_image", "web_search", "update_plan"}
    assert offered <= {"mcp__kernelgym", "list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource",
                       "request_user_input"}
    assert all(r["headers"].get("authorization") == f"Bearer {FAKE_KEY}" for r in main)
    # Codex reports usage once per turn: 4 replies x 1000 input tokens, 400 of them cached each time
    assert (result["usage"]["input_tokens"], result["usage"]["cached_tokens"]) == (2400, 1600)
    assert result["usage"]["output_tokens"] == 200 and steps[-1]["policy"]["usage"]["output_tokens"] == 200
    assert result["usage"]["cost_usd"] == pytest.approx(2400 * 1.25e-6 + 1600 * 0.125e-6 + 200 * 10e-6)
    assert any(e.get("type") == "item.completed" and e["item"].get("type") == "mcp_tool_call" for e in events)
    # the default model is not in Codex's catalogue: its fallback-metadata warning is in the transcript (see
    # docs/AGENT_CLIS.md), and it is neither an API error nor a retry; the episode above ran as usual
    assert any("Model metadata for `gpt-5-codex` not found" in json.dumps(e) for e in events[:3])
    assert result["policy_error"] is None and result["usage"]["retries"] == 0


def standin(tmp_path: Path) -> str:
    """An executable that runs the Cursor stand-in with this Python (which has the mcp SDK). In a folder of its own:
    the sandbox binds the executable's folder (its installation), which must not be the one holding the run."""
    (tmp_path / "bin").mkdir(exist_ok=True)
    exe = tmp_path / "bin" / "cursor-agent"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {STANDIN} \"$@\"\n")
    exe.chmod(0o755)
    return str(exe)


def cursor_episode(tmp_path, monkeypatch, script, **config):
    monkeypatch.setenv("CURSOR_API_KEY", FAKE_KEY)
    monkeypatch.setenv("CURSOR_STANDIN_SCRIPT", json.dumps(script))
    policy = load_policy("cursor-agent", binary=standin(tmp_path), pass_env=[
        "CURSOR_STANDIN_SCRIPT", "CURSOR_STANDIN_HANG", "CURSOR_STANDIN_PRELUDE",
        "CURSOR_STANDIN_NOISE"], sandbox_readonly=[str(STANDIN)], **config)
    env = TrajectoryRecorder(KernelArenaEnv("triton-rmsnorm", run_dir=tmp_path / "run", hardware="cpu-interpreter"),
                             tmp_path / "run" / "trajectories.jsonl")
    try:
        return rollout(env, policy, seed=0)
    finally:
        env.close()


def test_cursor_agent_whole_episode_with_standin(tmp_path, monkeypatch, require_bwrap):
    result = cursor_episode(tmp_path, monkeypatch, SCRIPT, model="sonnet-4", timeout_s=120)
    assert result["reward"] == 120.0 and result["terminated"] and result["steps"] == 3
    assert (result["usage"]["input_tokens"], result["usage"]["output_tokens"]) == (4000, 200)
    (transcript,) = (tmp_path / "run" / "agent_transcripts").glob("*.jsonl")
    events = [json.loads(x) for x in transcript.read_text().splitlines()]
    assert [e["subtype"] for e in events if e["type"] == "tool_call"] == ["started", "completed"] * 3
    assert events[0]["apiKeySource"] == "env"  # the key went in the environment, not on the command line
    summary = json.loads(transcript.with_suffix(".summary.json").read_text())
    assert "--approve-mcps" in summary["argv"] and "--force" not in summary["argv"]
    # the transcripts (the task, the model's words, the kernel) are this user's only
    folder = tmp_path / "run" / "agent_transcripts"
    assert folder.stat().st_mode & 0o777 == 0o700
    assert {f.stat().st_mode & 0o777 for f in folder.iterdir()} == {0o600} and len(list(folder.iterdir())) == 3
    assert FAKE_KEY not in (tmp_path / "run" / "trajectories.jsonl").read_text()


def test_cli_that_exits_without_submit_ends_truncated_and_graded(tmp_path, monkeypatch, require_bwrap):
    result = cursor_episode(tmp_path, monkeypatch, SCRIPT[:2], timeout_s=120)
    assert result["truncated"] and not result["terminated"] and result["reward"] == 120.0
    lines = [json.loads(x) for x in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()]
    assert lines[-1]["action"] == {"kind": "submit", "truncate": True}
    assert "exited without submitting" in lines[-1]["policy"]["note"]
    assert "stopped without submitting" in lines[-1]["observation"]["output"]
    # a session that ends without a submit is a policy error, so `kernelgym run` prints it and a script sees it
    assert result["policy_error"].startswith("policy error: cursor-agent exited without submitting (exit code 0)")


def test_cli_that_fails_reports_the_end_of_its_stderr(tmp_path, monkeypatch, require_bwrap):
    """A CLI that exits at once (here: a flag it does not know) leaves its own words in the policy error."""
    result = cursor_episode(tmp_path, monkeypatch, SCRIPT, timeout_s=120, extra_args=["--no-such-flag"])
    assert result["truncated"] and result["reward"] == 120.0
    error = result["policy_error"]
    assert "cursor-agent exited without submitting (exit code 2)" in error, error
    assert "unrecognized arguments: --no-such-flag" in error and "agent_transcripts" in error
    (summary,) = (tmp_path / "run" / "agent_transcripts").glob("*.summary.json")
    assert json.loads(summary.read_text())["policy_error"] == error.removeprefix("policy error: ")


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_claude_code_that_cannot_reach_its_api_gives_up_early(tmp_path, require_bwrap):
    """The real Claude Code with a base_url where nothing listens: its stream-json api_retry events are counted in
    usage.retries, and after give_up_after_api_errors of them the session is stopped (seconds, not timeout_s);
    `kernelgym run` prints the policy error quoting them and exits 3."""
    require_cli("claude")
    start = time.monotonic()
    proc = run_cli("claude-code", {"base_url": f"http://127.0.0.1:{closed_port()}", "timeout_s": 300,
                                   "give_up_after_api_errors": 3}, tmp_path / "runs", "ANTHROPIC_API_KEY")
    assert time.monotonic() - start < 120
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "claude-code gave up: 3 errors in a row" in proc.stdout
    # printed whole (nothing in it reads as rich markup): the CLI's own error lines and where its transcript is
    assert "API retry 3/10: no connection" in proc.stdout and "transcript: " in proc.stdout, proc.stdout
    (run,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    (result,) = json.loads((run / "results.json").read_text())
    assert result["reward"] == 120.0 and result["truncated"]
    assert "API retry 3/10: no connection" in result["policy_error"], result["policy_error"]
    assert result["usage"]["retries"] >= 3 and result["usage"]["api_calls"] == 0


def _feed(policy, tmp_path, events):
    """Account transcript events as the reader thread does (no CLI running)."""
    import io
    policy._summary = {}
    policy.transcript_path = tmp_path / "t.jsonl"
    policy._read_stdout(io.BytesIO("".join(json.dumps(e) + "\n" for e in events).encode()))


def test_codex_reconnects_are_retries_and_give_up_after_a_run_of_them(tmp_path):
    """Codex 0.171.0's own lines with a closed port: each reconnect is a retry; a tool call between them resets the
    run, so only give_up_after_api_errors in a row stop the session."""
    reconnect = {"type": "error", "message": "Reconnecting... waiting for network (Connection failed: error "
                                             "sending request)"}
    tool_call = {"type": "item.started", "item": {"type": "mcp_tool_call", "id": "i1"}}
    policy = load_policy("codex", give_up_after_api_errors=3)
    _feed(policy, tmp_path, [reconnect, reconnect, tool_call, reconnect, reconnect])
    assert policy._usage.retries == 4 and policy._give_up is None
    _feed(policy, tmp_path, [reconnect])
    assert policy._give_up.startswith("gave up: 3 errors in a row") and policy._usage.retries == 5
    assert policy._api_errors[-1] == [reconnect["message"], 3]  # repeated lines are kept once, counted


def test_claude_code_overload_retries_are_counted_but_left_to_the_cli(tmp_path):
    """A 529 (overloaded) or 429 fixes itself: counted as a retry, never a reason to give up early."""
    policy = load_policy("claude-code", give_up_after_api_errors=2)
    retry = {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10, "retry_delay_ms": 500,
             "error_status": 529, "error": "overloaded_error"}
    _feed(policy, tmp_path, [retry, retry, retry])
    assert policy._usage.retries == 3 and policy._give_up is None
    assert policy._summary["usage"]["retries"] == 3  # the summary's totals too


def processes_with(marker: str) -> list[int]:
    """Host pids of the live (not zombie) processes whose command line holds `marker`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "cmdline").read_bytes() \
                    and (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_timeout_kills_the_process_group(tmp_path, monkeypatch, require_bwrap):
    marker = f"kernelgym-standin-child-{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setenv("CURSOR_STANDIN_HANG", marker)
    start = time.monotonic()
    result = cursor_episode(tmp_path, monkeypatch, [], timeout_s=3)
    assert time.monotonic() - start < 60
    assert result["truncated"] and result["reward"] == 120.0
    (transcript,) = (tmp_path / "run" / "agent_transcripts").glob("*.jsonl")
    assert f'"marker": "{marker}"' in transcript.read_text()  # the child was started
    time.sleep(0.2)
    assert not processes_with(marker), "the CLI's child outlived the timeout"
    (summary,) = (tmp_path / "run" / "agent_transcripts").glob("*.summary.json")
    assert "timed out" in json.loads(summary.read_text())["ending"]
    assert result["policy_error"].startswith("policy error: cursor-agent timed out after 3 s (process group killed)")


def test_truncate_is_only_a_submit_flag():
    from kernelgym.spaces import ActionError, parse_action
    assert parse_action({"kind": "submit", "truncate": True}).truncate
    assert not parse_action({"kind": "submit"}).truncate
    for bad in ({"kind": "shell", "cmd": "ls", "truncate": True}, {"kind": "submit", "truncate": "yes"}):
        with pytest.raises(ActionError, match="truncate"):
            parse_action(bad)


def test_missing_binary_and_key_are_clear_errors(tmp_path, monkeypatch):
    policy = load_policy("cursor-agent", binary="no-such-cursor-agent-binary")
    with pytest.raises(MissingBinaryError, match="not installed.*Install Cursor's CLI"):
        policy.reset({"prompt": "x"}, {"workspace": str(tmp_path / "ep" / "workspace")})
    monkeypatch.delenv("CURSOR_API_KEY", raising=False)
    policy = load_policy("cursor-agent", binary=standin(tmp_path))
    with pytest.raises(MissingApiKeyError, match="export CURSOR_API_KEY"):
        policy.reset({"prompt": "x"}, {"workspace": str(tmp_path / "ep" / "workspace")})
    policy.close()


@pytest.mark.parametrize("policy,key_env,binary,error", [
    ("claude-code", "ANTHROPIC_API_KEY", sys.executable, "MissingApiKeyError"),
    ("codex", "OPENAI_API_KEY", sys.executable, "MissingApiKeyError"),
    ("claude-code", None, "no-such-claude-binary", "MissingBinaryError")])
def test_kernelgym_run_without_key_is_a_graded_policy_error(policy, key_env, binary, error, tmp_path, require_bwrap):
    """A CLI policy whose key is unset (or whose CLI is missing) fails in reset(); `kernelgym run` still grades the
    kernel as it stands, writes results.json with the error naming the variable (or the binary), and exits 3
    (every episode had a policy error), as the API policies do when their first call finds no key."""
    env = {k: v for k, v in os.environ.items() if k != key_env}
    proc = subprocess.run([sys.executable, "-m", "kernelgym.cli", "run", "--task", "triton-rmsnorm", "--policy", policy,
                           "--policy-config", json.dumps({"binary": binary}), "--run-dir",
                           str(tmp_path / "runs"), "--hardware", "cpu-interpreter"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert (f"export {key_env}" if key_env else "not installed") in proc.stdout
    (run,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    (result,) = json.loads((run / "results.json").read_text())
    assert result["reward"] == 120.0 and result["terminated"] and result["steps"] == 1
    assert error in result["policy_error"] and (key_env or binary) in result["policy_error"]


def test_list_shows_what_each_cli_policy_needs():
    proc = subprocess.run([sys.executable, "-m", "kernelgym.cli", "list"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for name, needs in (("claude-code", "binary:claude"), ("codex", "binary:codex"),
                        ("cursor-agent", "binary:cursor-agent")):
        line = next(x for x in proc.stdout.splitlines() if f" {name} " in x)
        assert needs in line, line


@pytest.mark.parametrize("name", ["claude-code", "codex", "cursor-agent"])
def test_mcp_token_never_on_the_command_line(name, tmp_path):
    """The bridge's bearer token reaches each CLI through a private file or its environment, not argv (which any
    local process reads in /proc/<pid>/cmdline); Claude Code and Cursor get the URL that way too."""
    from kernelgym.agents.launcher import MCP_TOKEN_ENV
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    policy = load_policy(name)
    url, token = "http://127.0.0.1:5/mcp/secret-path", "tok-" + "z" * 40
    policy._mcp_token = token
    argv, _ = policy.command("/bin/cli", "the prompt", url, home, token)
    assert not any(token in a for a in argv)
    env = policy.child_env(home, FAKE_KEY)
    if name == "codex":  # Codex reads the token from the variable its config names
        assert f'mcp_servers.kernelgym.bearer_token_env_var="{MCP_TOKEN_ENV}"' in argv
        assert env[MCP_TOKEN_ENV] == token
        return
    assert not any(url in a for a in argv) and MCP_TOKEN_ENV not in env
    config = home / ("kernelgym-mcp.json" if name == "claude-code" else ".cursor/mcp.json")
    if name == "claude-code":
        assert argv[argv.index("--mcp-config") + 1] == str(config)
    server = json.loads(config.read_text())["mcpServers"]["kernelgym"]
    assert server["url"] == url and server["headers"] == {"Authorization": f"Bearer {token}"}
    assert config.stat().st_mode & 0o777 == 0o600


def test_submit_with_arguments_is_a_bare_submit(tmp_path, monkeypatch, require_bwrap):
    """The submit tool takes no arguments: a submit call with some (which the env would refuse) still ends the
    episode terminated and graded, not truncated after the CLI was stopped."""
    result = cursor_episode(tmp_path, monkeypatch, [("submit", {"config": "zzz"})], timeout_s=120)
    assert result["terminated"] and not result["truncated"] and result["reward"] == 120.0
    lines = [json.loads(x) for x in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()]
    assert lines[-1]["action"] == {"kind": "submit"}
    assert lines[-1]["policy"]["tool_call"] == {"name": "submit", "arguments": {"config": "zzz"}}


def test_malformed_usage_line_does_not_stall_the_cli(tmp_path, monkeypatch, require_bwrap):
    """A transcript line the usage parser chokes on (NaN tokens), followed by more output than a pipe holds: the
    reader keeps draining, so the CLI goes on and the episode ends at its submit, not at the timeout."""
    monkeypatch.setenv("CURSOR_STANDIN_PRELUDE", json.dumps([
        {"type": "result", "usage": {"inputTokens": float("nan"), "outputTokens": [1]}, "total_cost_usd": float("inf")},
        {"type": "tool_call", "subtype": "started", "usage": "n/a"}]))
    monkeypatch.setenv("CURSOR_STANDIN_NOISE", "3000")  # ~400 KB
    start = time.monotonic()
    result = cursor_episode(tmp_path, monkeypatch, SCRIPT, timeout_s=90)
    assert time.monotonic() - start < 60
    assert result["terminated"] and not result["truncated"] and result["reward"] == 120.0
    assert (result["usage"]["input_tokens"], result["usage"]["output_tokens"]) == (4000, 200)  # the NaN line adds 0
    (transcript,) = (tmp_path / "run" / "agent_transcripts").glob("*.jsonl")
    assert sum(1 for x in transcript.read_text().splitlines() if '"noise"' in x) == 3000


def test_usage_parsers_take_any_json(tmp_path):
    """Each CLI policy's usage parser returns counts (or None) for events with nonsense in them, never raises."""
    weird = ["n/a", None, float("nan"), float("inf"), -5, [1], {"a": 1}, True, 1e30]
    claude, codex, cursor = (load_policy(n) for n in ("claude-code", "codex", "cursor-agent"))
    for value in weird:
        u = {k: value for k in ("input_tokens", "output_tokens", "cache_read_input_tokens", "inputTokens",
                                "cached_input_tokens", "outputTokens")}
        for policy, event in ((claude, {"type": "assistant", "message": {"id": [value], "model": value, "usage": u}}),
                              (claude, {"type": "result", "usage": u}), (codex, {"type": "turn.completed", "usage": u}),
                              (cursor, {"type": "result", "usage": u})):
            got = policy.parse_totals(event) or policy.parse_event(event)
            assert got is not None
            assert all(isinstance(getattr(got, k), int) and getattr(got, k) >= 0
                       for k in ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens"))
            if value != 1e30:  # a number stays a number; nonsense counts 0
                assert (got.input_tokens, got.output_tokens) == (0, 0)
            else:
                assert got.output_tokens == int(value)


def test_deadline_holds_for_a_cli_that_calls_tools_back_to_back(tmp_path):
    """With calls always waiting, the session still times out: the deadline is checked before each take."""
    import queue as queue_mod
    from kernelgym.agents.bridge import ToolCall
    policy = load_policy("cursor-agent")
    policy.bridge = type("StubBridge", (), {"calls": queue_mod.Queue()})()
    for _ in range(5):
        policy.bridge.calls.put(ToolCall("shell", {"cmd": "ls"}, {"kind": "shell", "cmd": "ls"}))
    policy.proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    policy._summary = {"ending": None}
    policy._deadline = time.monotonic() - 1
    try:
        assert policy._next_call() is None
        assert "timed out" in policy._summary["ending"] and policy.proc.poll() is not None
        assert policy.bridge.calls.qsize() == 5
    finally:
        if policy.proc.poll() is None:
            policy.proc.kill()
        policy.proc.wait()


ORPHAN_PARENT = r"""
import os, sys, time
from kernelgym.policy import load_policy
policy = load_policy("cursor-agent", binary=sys.argv[1], timeout_s=600)
policy.reset({"prompt": "x"}, {"workspace": sys.argv[2]})
print(policy.proc.pid, flush=True)
print(policy._home, flush=True)
time.sleep(600)
"""


def test_cli_dies_with_a_killed_kernelgym(tmp_path):
    """SIGKILL to the process running the policy (no close(), no finally) takes the CLI and the helpers it forked
    with it (a parent-death signal to the reaper, which kills the group), and the CLI's private directory, where CLIs
    keep secrets (Codex snapshots its environment, the key in it), is removed."""
    marker = f"kernelgym-helper-{os.getpid()}-{time.monotonic_ns()}"  # found among the host's processes
    (tmp_path / "bin").mkdir()
    cli = tmp_path / "bin" / "sleeper"
    cli.write_text(f"#!/bin/sh\n{sys.executable} -c 'import time; time.sleep(120)' {marker} &\nwait\n")
    cli.chmod(0o755)
    workspace = tmp_path / "run" / "episodes" / "ep1" / "workspace"
    workspace.mkdir(parents=True)
    parent = subprocess.Popen([sys.executable, "-c", ORPHAN_PARENT, str(cli), str(workspace)],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "CURSOR_API_KEY": FAKE_KEY})
    try:
        leader = int(parent.stdout.readline())
        home = Path(parent.stdout.readline().strip())
        assert home.is_dir()
        deadline = time.monotonic() + 20
        while not processes_with(marker):
            assert time.monotonic() < deadline, "the stand-in CLI did not start"
            time.sleep(0.05)
        (helper,) = processes_with(marker)
    finally:
        parent.kill()
        parent.wait()

    def alive(pid):
        try:
            return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
        except OSError:
            return False
    deadline = time.monotonic() + 10
    while (alive(leader) or alive(helper)) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = [pid for pid in (leader, helper) if alive(pid)]
    for pid in survivors:
        os.kill(pid, 9)
    assert not survivors, "the CLI (or its helper) outlived the killed process that launched it"
    assert not home.exists(), "the CLI's private directory outlived the killed process that launched it"


def test_transcript_lines_are_parsed_before_redaction(tmp_path):
    """A key that also occurs in the JSON's own text (here, a field name) is redacted on disk only: the usage is
    still read from the line as the CLI wrote it."""
    import io
    policy = load_policy("claude-code")
    policy._secret = "output_tokens"  # a pathological key: it is also a usage field's name
    policy._summary = {}
    policy.transcript_path = tmp_path / "t.jsonl"
    line = {"type": "assistant", "message": {"id": "m1", "model": "claude-x", "content": [],
                                             "usage": {"input_tokens": 7, "output_tokens": 5}}}
    policy._read_stdout(io.BytesIO((json.dumps(line) + "\n").encode()))
    assert (policy._usage.input_tokens, policy._usage.output_tokens) == (7, 5)
    written = policy.transcript_path.read_text()
    assert "output_tokens" not in written and '"[redacted]": 5' in written


def _ask_model_proxy(sock_path, request: bytes, tunnel_open) -> bytes:
    """Send `request` to the model proxy's socket and read its answer to the end; on a CONNECT, send ``hello`` into
    the tunnel once `tunnel_open(data so far)` says the proxy's answer opened it."""
    import socket
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(str(sock_path))
        s.sendall(request)
        data = b""
        while chunk := s.recv(4096):
            data += chunk
            if request.startswith(b"CONNECT") and tunnel_open(data):
                s.sendall(b"hello")
        return data


def test_model_proxy_relays_only_the_allowed_target(tmp_path):
    """The sandbox's model proxy (no CLI): CONNECT to the allowed host:port is answered 200 and relayed both ways,
    an absolute-form GET to it is relayed as it is, and another port is refused 403 without a connection."""
    import socket
    import threading
    from kernelgym.agents.confine import ModelProxy
    upstream = socket.socket()
    upstream.bind(("127.0.0.1", 0))
    upstream.listen(4)
    port = upstream.getsockname()[1]

    def echo():
        for _ in range(2):
            conn, _ = upstream.accept()
            conn.sendall(b"upstream got: " + conn.recv(100))
            conn.close()
    threading.Thread(target=echo, daemon=True).start()
    proxy = ModelProxy(tmp_path / "proxy.sock", [f"127.0.0.1:{port}"])

    def ask(request: bytes) -> bytes:
        return _ask_model_proxy(tmp_path / "proxy.sock", request, lambda data: data.endswith(b"\r\n\r\n"))
    try:
        assert ask(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode()).endswith(b"upstream got: hello")
        got = ask(f"GET http://127.0.0.1:{port}/x HTTP/1.1\r\nhost: a\r\n\r\n".encode())
        assert got.startswith(b"upstream got: GET http://127.0.0.1:")
        assert ask(f"CONNECT 127.0.0.1:{port + 1} HTTP/1.1\r\n\r\n".encode()).startswith(b"HTTP/1.1 403")
        assert [allowed for _, _, allowed in proxy.log] == [True, True, False]
    finally:
        proxy.close()
        upstream.close()


def test_model_proxy_chains_the_users_http_proxy(tmp_path):
    """Behind the user's own proxy (HTTPS_PROXY/HTTP_PROXY in kernelgym's environment), the sandbox's model proxy
    reaches the allowed host through it: CONNECT through it (with its Basic auth) for CONNECT, the absolute-form
    request handed to it for http; a host not allowed never gets there (403); a CONNECT it refuses is a 502 naming
    it; a socks proxy is refused at once with an error that says what to do."""
    import socket
    import threading
    from kernelgym.agents.confine import ModelProxy, UpstreamProxyError
    seen: list[bytes] = []
    fake = socket.socket()  # the user's proxy, on loopback: it answers each request itself
    fake.bind(("127.0.0.1", 0))
    fake.listen(8)
    fake_port = fake.getsockname()[1]

    def serve():
        while True:
            try:
                conn, _ = fake.accept()
            except OSError:
                return
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(4096)
            seen.append(head)
            if head.startswith(b"CONNECT refused.kernelgym.invalid"):
                conn.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n")
            elif head.startswith(b"CONNECT"):
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                conn.sendall(b"tunnel got: " + conn.recv(100))
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            conn.close()
    threading.Thread(target=serve, daemon=True).start()
    proxy_url = f"http://kg:p%40ss@127.0.0.1:{fake_port}"
    environ = {"HTTPS_PROXY": proxy_url, "http_proxy": proxy_url, "NO_PROXY": "localhost"}
    allow = ["api.kernelgym.invalid:443", "plain.kernelgym.invalid:80", "refused.kernelgym.invalid:443"]
    proxy = ModelProxy(tmp_path / "proxy.sock", allow, environ=environ)

    def ask(request: bytes) -> bytes:
        return _ask_model_proxy(tmp_path / "proxy.sock", request,
                                lambda data: data == b"HTTP/1.1 200 Connection established\r\n\r\n")
    auth = b"Proxy-Authorization: Basic a2c6cEBzcw=="  # kg:p@ss
    try:
        got = ask(b"CONNECT api.kernelgym.invalid:443 HTTP/1.1\r\n\r\n")
        assert got.endswith(b"tunnel got: hello"), got
        assert seen[-1].startswith(b"CONNECT api.kernelgym.invalid:443 HTTP/1.1\r\n") and auth in seen[-1]
        got = ask(b"GET http://plain.kernelgym.invalid/v1/models HTTP/1.1\r\nhost: plain.kernelgym.invalid\r\n\r\n")
        assert got.endswith(b"ok"), got
        assert seen[-1].startswith(b"GET http://plain.kernelgym.invalid/v1/models HTTP/1.1\r\n") and auth in seen[-1]
        asked = len(seen)
        assert ask(b"CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 403")
        assert len(seen) == asked  # a host not allowed is refused before the user's proxy is asked
        got = ask(b"CONNECT refused.kernelgym.invalid:443 HTTP/1.1\r\n\r\n")
        assert got.startswith(b"HTTP/1.1 502") and f"127.0.0.1:{fake_port} (HTTPS_PROXY)".encode() in got, got
        assert b"407" in got and b"p@ss" not in got and b"p%40ss" not in got
    finally:
        proxy.close()
        fake.close()
    with pytest.raises(UpstreamProxyError, match=r"only an http:// proxy.*not socks5://") as caught:
        ModelProxy(tmp_path / "other.sock", allow, environ={"ALL_PROXY": "socks5://kg:secret@127.0.0.1:1080"})
    assert "secret" not in str(caught.value) and "ALL_PROXY" in str(caught.value)
    assert not (tmp_path / "other.sock").exists()


def test_sandbox_of_a_non_root_kernelgym(tmp_path, monkeypatch, require_bwrap):
    """The path taken where kernelgym runs as an ordinary user (no setpriv drop; bwrap --unshare-all makes a user
    namespace, so unprivileged user namespaces must be allowed): the sandbox's argv run as uid 65534 (dropped from
    root here with setpriv, kernelgym's own files made that user's as they would be) keeps its user, a read-only
    system and a writable $HOME, sees none of the host's /tmp, and reaches the MCP socket through the relay."""
    import shutil
    import socket
    import threading
    import types
    from kernelgym.agents import confine
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("drops to an ordinary user from root with setpriv")
    drop = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--"]
    probe = subprocess.run([*drop, shutil.which("bwrap"), "--unshare-all", "--ro-bind", "/", "/", "true"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:  # what a non-root kernelgym meets here too: bwrap's words become the policy error
        pytest.skip(f"unprivileged user namespaces are not allowed on this machine: {probe.stderr.strip()}")
    monkeypatch.setattr(confine.host_sandbox, "sandbox_user", lambda: None)
    # this Python may lie where uid 65534 cannot read (/root/.pyenv here); the relay runs on /usr/bin/python3
    monkeypatch.setattr(confine, "sys", types.SimpleNamespace(prefix="/usr", base_prefix="/usr"))
    box = confine.CLISandbox("non-root", "/usr/bin/env")
    marker = tmp_path / "host-tmp-file"
    marker.write_text("x")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(box.socket_path("mcp")))
    os.chmod(box.socket_path("mcp"), 0o666)
    server.listen(1)

    def answer():
        conn, _ = server.accept()
        conn.sendall(b"MCP-HELLO")
        conn.close()
    threading.Thread(target=answer, daemon=True).start()
    try:
        box.forward_mcp(45678)
        box.route_model("")
        for path in (box.root, box.home, box.home / "tmp"):
            os.chown(path, 65534, 65534)
        script = (f"id -u; echo x > /usr/lib/kernelgym-non-root.txt || echo REFUSED; echo y > $HOME/mine && "
                  f"echo HOME-OK; ls {marker} 2>&1; python3 -c \"import socket; "
                  f"print(socket.create_connection(('127.0.0.1', 45678), 5).recv(20))\"")
        argv = [*drop, *box.argv(["/bin/sh", "-c", script])]
        assert "--unshare-all" in argv and "setpriv" not in argv[1:]  # no drop of its own: it is that user already
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                              env={"PATH": "/usr/bin:/bin", "HOME": str(box.home)})
    finally:
        server.close()
        box.close()
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    assert lines[0] == "65534" and "REFUSED" in lines and "HOME-OK" in lines, proc.stdout
    assert "No such file or directory" in proc.stdout and "b'MCP-HELLO'" in proc.stdout, proc.stdout
    assert not os.path.exists("/usr/lib/kernelgym-non-root.txt")


def test_reset_behind_a_socks_proxy_fails_with_what_to_do(tmp_path, monkeypatch, require_bwrap):
    """A user whose environment names a proxy the sandbox cannot chain (socks5) gets UpstreamProxyError from the
    policy's reset, before any CLI starts, naming the variable and not its password."""
    from kernelgym.agents.confine import UpstreamProxyError
    require_cli("codex")
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("HTTPS_PROXY", "socks5://kg:hunter2@127.0.0.1:1080")
    policy = load_policy("codex")  # the default base_url, https://api.openai.com/v1: reached through the proxy
    workspace = tmp_path / "run" / "episodes" / "e1" / "workspace"
    workspace.mkdir(parents=True)
    try:
        with pytest.raises(UpstreamProxyError, match=r"HTTPS_PROXY=.*only an http:// proxy") as caught:
            policy.reset({"prompt": "p"}, {"workspace": str(workspace)})
        assert policy.proc is None and "hunter2" not in str(caught.value)
        folder = policy.box.root
    finally:
        policy.close()
    assert not folder.exists()  # the sandbox's folder, set up before the proxy was read, is removed by close()


def test_non_root_without_user_namespaces_is_a_clear_error(tmp_path, monkeypatch):
    """Run as an ordinary user on a machine where bwrap cannot make a user namespace (a stand-in bwrap that fails as
    the real one does), the CLI's sandbox is refused before any episode starts, with bwrap's words and the ways
    out."""
    from kernelgym.agents import confine
    from kernelgym.errors import SandboxUnavailableError
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(confine.host_sandbox, "sandbox_user", lambda: None)
    with pytest.raises(SandboxUnavailableError, match=r"setting up uid map: Permission denied.*sandbox='none'"):
        confine.CLISandbox("codex", "/usr/bin/env")
    assert str(fake) not in confine._USERNS_CHECKED  # a failed check is not remembered as passed
