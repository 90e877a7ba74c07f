"""Built-in policies: loading by folder, config overrides, the tuner's parsing and plan."""
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
