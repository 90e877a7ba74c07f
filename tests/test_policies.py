"""Built-in policies: loading by folder, config overrides, the tuner's parsing and plan."""
import re

import pytest

from kernelgym.errors import PolicyConfigError, UnknownPolicyError
from kernelgym.policy import available_policies, load_policy


def test_available_and_unknown():
    assert {"scripted", "tuner"} <= set(available_policies())
    with pytest.raises(UnknownPolicyError, match="Did you mean 'scripted'"):
        load_policy("scripte")
    with pytest.raises(PolicyConfigError, match="unknown config fields"):
        load_policy("tuner", blocks=[1])


def test_scripted_replays_then_submits():
    p = load_policy("scripted", actions=[{"kind": "shell", "cmd": "ls"}])
    p.reset({}, {})
    assert p.act({}, {}) == {"kind": "shell", "cmd": "ls"}
    assert p.act({}, {}) == {"kind": "submit"}


def test_tuner_keeps_fastest_correct_variant():
    p = load_policy("tuner", params={"BLOCK_SIZE": [256, 2048]})
    p.reset({}, {})
    src = "BLOCK_SIZE = 1024\nNUM_WARPS = 4\n"
    assert p.act({}, {})["kind"] == "read_file"
    assert p.act({"output": src}, {})["kind"] == "shell"
    # baseline 1.0 ms; 256 is wrong; 2048 correct and faster
    a = p.act({"output": "CHECK correct=3/3 time_ms=1.0"}, {})
    assert a["kind"] == "write_file" and "BLOCK_SIZE = 256" in a["content"]
    p.act({"output": "wrote"}, {})
    a = p.act({"output": "CHECK correct=2/3 time_ms=0.1"}, {})
    assert "BLOCK_SIZE = 2048" in a["content"]
    p.act({"output": "wrote"}, {})
    final = p.act({"output": "CHECK correct=3/3 time_ms=0.5"}, {})
    assert final["kind"] == "write_file" and "BLOCK_SIZE = 2048" in final["content"] and "NUM_WARPS = 4" in final["content"]
    assert p.act({"output": "wrote"}, {}) == {"kind": "submit"}


def test_tuner_without_timing_keeps_original():
    p = load_policy("tuner", params={"BLOCK_SIZE": [256]})
    p.reset({}, {})
    p.act({}, {})
    p.act({"output": "BLOCK_SIZE = 1024\n"}, {})
    p.act({"output": "CHECK correct=3/3 time_ms=nan"}, {})
    p.act({"output": "wrote"}, {})
    final = p.act({"output": "CHECK correct=3/3 time_ms=nan"}, {})
    assert "BLOCK_SIZE = 1024" in final["content"]


ECHO_POLICY = '''
from dataclasses import dataclass


@dataclass
class EchoConfig:
    cmd: str = "echo hi"
    """The command run at every step."""


class EchoPolicy:
    def __init__(self, config):
        self.config = config

    def reset(self, observation, info):
        pass

    def act(self, observation, info):
        return {"kind": "shell", "cmd": self.config.cmd}
'''


def _policy(root, name="echo", source=ECHO_POLICY, config="cmd: echo from-yaml\n"):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "policy.py").write_text(source)
    (folder / "config.yaml").write_text(config)
    return folder


def test_user_policy_from_dir_and_env_var(tmp_path, monkeypatch):
    from kernelgym.policy import POLICIES_PATH_ENV
    _policy(tmp_path / "mine")
    assert "echo" in available_policies(tmp_path / "mine") and "tuner" in available_policies(tmp_path / "mine")
    p = load_policy("echo", policies_dir=tmp_path / "mine")
    assert p.act({}, {}) == {"kind": "shell", "cmd": "echo from-yaml"}
    assert load_policy("echo", policies_dir=[tmp_path / "mine"], cmd="ls").act({}, {})["cmd"] == "ls"
    with pytest.raises(UnknownPolicyError, match="Unknown policy 'echo'"):
        load_policy("echo")
    monkeypatch.setenv(POLICIES_PATH_ENV, str(tmp_path / "mine"))
    assert "echo" in available_policies()


def test_user_policy_reusing_a_name_is_an_error_naming_both(tmp_path):
    from kernelgym.policy import DEFAULT_POLICIES_ROOT
    folder = _policy(tmp_path / "mine", name="tuner")
    with pytest.raises(PolicyConfigError, match=re.escape(f"{folder}: policy name 'tuner' is already taken by "
                                                          f"{DEFAULT_POLICIES_ROOT / 'tuner'}")):
        load_policy("tuner", policies_dir=tmp_path / "mine")
    assert load_policy("scripted", policies_dir=tmp_path / "mine")  # other policies are unaffected


def test_broken_user_policy_names_its_file(tmp_path):
    folder = _policy(tmp_path / "mine", name="oops", source="def broken(:\n")
    with pytest.raises(PolicyConfigError, match=re.escape(f"{folder / 'policy.py'}: does not import: SyntaxError")):
        load_policy("oops", policies_dir=tmp_path / "mine")
    folder = _policy(tmp_path / "mine", name="empty", source="X = 1\n")
    with pytest.raises(PolicyConfigError, match="defines no EmptyConfig or EmptyPolicy"):
        load_policy("empty", policies_dir=tmp_path / "mine")


def test_every_builtin_policy_states_what_it_needs_and_closes():
    from kernelgym.policy import DEFAULT_POLICIES_ROOT, policy_requirements, requirement_met
    for name in available_policies():
        folder = DEFAULT_POLICIES_ROOT / name
        if folder.is_dir():
            text = (folder / "policy.py").read_text()
            assert "REQUIRES" in text, f"{name}: policy.py defines no REQUIRES"
            assert all(r.split(":")[0] in ("env", "binary", "python") for r in policy_requirements(folder)), name
    for name in ("scripted", "tuner"):
        assert policy_requirements(DEFAULT_POLICIES_ROOT / name) == []
        load_policy(name).close()  # a no-op, but there
    assert requirement_met("python:json") and not requirement_met("python:no_such_module_kg")
    assert requirement_met("binary:sh") and not requirement_met("binary:no-such-binary-kg")
    assert requirement_met("env:KG_SURELY_UNSET_VAR") is False and requirement_met("url:x") is None


def test_requires_is_read_without_importing(tmp_path):
    from kernelgym.policy import policy_requirements
    folder = _policy(tmp_path / "mine", source='raise SystemExit("imported!")\nREQUIRES = ["env:MY_KEY"]\n')
    assert policy_requirements(folder) == ["env:MY_KEY"]
    assert policy_requirements(_policy(tmp_path / "mine", name="bad", source="def broken(:\n")) == []


def test_binary_requirement_is_met_where_the_cli_policies_look(tmp_path, monkeypatch):
    """`kernelgym list` finds a CLI that `bash .ci/setup --agents` installed into .agents/ (not on PATH)."""
    import kernelgym.agents.launcher as launcher
    from kernelgym.policy import requirement_met
    cli = tmp_path / "agents" / "node_modules" / ".bin" / "kgtest-fake-cli"
    cli.parent.mkdir(parents=True)
    cli.write_text("#!/bin/sh\n")
    cli.chmod(0o755)
    monkeypatch.setattr(launcher, "LOCAL_AGENTS_DIR", tmp_path / "agents")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert requirement_met("binary:kgtest-fake-cli") is True
    assert requirement_met("binary:kgtest-no-such-cli") is False


@pytest.mark.parametrize("name,overrides,field,expected,got", [
    ("scripted", {"actions": "x"}, "actions", "list[dict[str, Any]]", "str 'x'"),
    ("scripted", {"actions": ["python check.py"]}, "actions", "list[dict[str, Any]]", "list"),
    ("openai", {"max_tokens": "lots"}, "max_tokens", "int", "str 'lots'"),
    ("openai", {"max_retries": True}, "max_retries", "int", "bool True"),
    ("anthropic", {"temperature": "hot"}, "temperature", "float or null", "str 'hot'"),
    ("claude-code", {"pass_env": "HTTPS_PROXY"}, "pass_env", "list[str]", "str 'HTTPS_PROXY'"),
    ("codex", {"prices": {"m": {"input": "cheap", "output": 1}}}, "prices", "dict[str, dict[str, float]]", "dict"),
])
def test_config_values_are_type_checked(name, overrides, field, expected, got):
    """A value of the wrong type fails at load time naming the field, the expected type and what was given (a
    string where a list is expected would otherwise be iterated character by character)."""
    with pytest.raises(PolicyConfigError, match=re.escape(f"config field {field!r} expects {expected}, got {got}")):
        load_policy(name, **overrides)


def test_config_type_checks_accept_what_the_defaults_hold():
    """Ints for float fields, null for Optional ones, and every built-in config.yaml as it ships."""
    load_policy("openai", timeout_s=30, temperature=None, base_url=None, parallel_tool_calls=True)
    load_policy("claude-code", timeout_s=90, extra_args=["--debug"])
    for name in ("scripted", "openai", "anthropic", "claude-code", "codex", "cursor-agent"):
        load_policy(name)


def test_yaml_values_are_type_checked_and_named_by_file(tmp_path):
    _policy(tmp_path, config="cmd: [echo, hi]\n")
    with pytest.raises(PolicyConfigError, match=r"config\.yaml: config field 'cmd' expects str, got list"):
        load_policy("echo", policies_dir=tmp_path)


@pytest.mark.parametrize("field", ["effort", "base_url"])
def test_cursor_agent_refuses_fields_it_cannot_use(field):
    with pytest.raises(PolicyConfigError, match=f"cursor-agent: config field '{field}' is not supported"):
        load_policy("cursor-agent", **{field: "high"})
