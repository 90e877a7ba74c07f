"""`KernelArenaSkyRLEnv` (a skyrl_gym BaseTextEnv) stepped through a graded episode on the CPU interpreter."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

from kernelgym.integrations.skyrl import KernelArenaSkyRLEnv, parse_reply, register  # noqa: E402


def call(name: str, **arguments) -> str:
    return f"I will {name}.\n<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def test_read_edit_submit_is_graded_and_a_malformed_reply_goes_on(tmp_path):
    register()
    env = skyrl_gym.make("kernelgym", env_config={"run_dir": str(tmp_path), "max_steps": 6},
                         extras={"task": "triton-rmsnorm", "seed": 0})
    assert isinstance(env, KernelArenaSkyRLEnv)
    conversation, meta = env.init([{"role": "user", "content": "Optimize this kernel."}])
    assert len(conversation) == 1 and conversation[0]["content"].startswith("Optimize this kernel.")
    assert "KernelArena/triton-rmsnorm-v0" in conversation[0]["content"] and "<tool_call>" in conversation[0]["content"]
    assert meta["max_turns"] == 6

    out = env.step("Let me look around first, no tool call here.")
    assert out["done"] is False and out["reward"] == 0.0
    assert out["observations"][0]["content"].startswith("error: no tool call")
    out = env.step('<tool_call>{"name": "read_file", "arguments": {"path": </tool_call>')
    assert out["done"] is False and "not valid JSON" in out["observations"][0]["content"]

    out = env.step(call("read_file", path="kernel.py"))
    assert out["done"] is False and "BLOCK_SIZE = 1024" in out["observations"][0]["content"]
    out = env.step(call("edit_file", path="kernel.py", old="BLOCK_SIZE = 1024", new="BLOCK_SIZE = 2048"))
    assert out["done"] is False and out["observations"][0]["content"].startswith("edited kernel.py")
    assert "BLOCK_SIZE = 2048" in (tmp_path.glob("episodes/*/workspace/kernel.py").__next__()).read_text()
    out = env.step(call("submit"))
    assert out["done"] is True and out["reward"] == 120.0
    assert out["metadata"]["correct"] is True and out["metadata"]["score"] == 120.0
    assert env.get_metrics() == {"score": 120.0, "compiled": 1.0, "correct": 1.0}
    assert env.step(call("submit"))["done"] is True  # over: no second grade
    env.close()
    assert env.env is None


def test_the_turn_budget_grades_the_kernel_as_it_stands(tmp_path):
    env = KernelArenaSkyRLEnv({"run_dir": str(tmp_path)}, {"extra_info": {"task": "triton-rmsnorm"}, "max_turns": 1})
    env.init([])
    out = env.step('{"kind": "write_file", "path": "kernel.py", "content": "this is not python"}')
    assert out["done"] is True and out["reward"] == 0.0  # graded at the budget: the file does not compile
    assert out["metadata"]["compiled"] is False and "Grade for" in out["observations"][0]["content"]
    env.close()


def test_parse_reply_forms():
    assert parse_reply(call("shell", cmd="ls")) == {"kind": "shell", "cmd": "ls"}
    assert parse_reply('{"name": "bench", "arguments": "{}"}') == {"kind": "bench"}
    assert parse_reply('ok: {"kind": "read_file", "path": "kernel.py"}') == {"kind": "read_file", "path": "kernel.py"}
    assert parse_reply(call("submit", truncate=True)) == {"kind": "submit"}  # truncate is the adapter's signal alone


def test_without_skyrl_gym_the_import_names_the_extra():
    code = ("import sys; sys.modules['skyrl_gym'] = None; import kernelgym, kernelgym.integrations.trl\n"
            "try:\n    import kernelgym.integrations.skyrl\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "pip install 'kernelgym[skyrl]'" in out.stdout, out.stderr
