"""Attack: a shell command plants a FIFO and a 2 GB sparse file in the workspace; file actions (run in the trusted
env process) on them would block forever on the FIFO, or read the whole file into the env's memory; a deeply
nested JSON action would blow the parser's stack.

Defences: `file_action_regular_files` (files are opened O_NONBLOCK and only regular files are accepted, checked on
the open descriptor) and `file_action_read_cap` (at most the observation's length is read; edit_file refuses longer
files instead of cutting them).
Honest twin: file actions on small regular files work (tests/test_env.py, test_file_actions_and_json_strings).
"""
import pytest


@pytest.mark.timeout(120)
def test_fifo_and_huge_files_cannot_hang_or_exhaust_the_env(env):
    env.reset(seed=0)
    env.step({"kind": "shell", "cmd": "mkfifo pipe && truncate -s 2G huge.bin"})
    obs, *_ = env.step({"kind": "write_file", "path": "pipe", "content": "x"})
    assert obs["output"].startswith("error:") and "regular file" in obs["output"]
    obs, *_ = env.step({"kind": "read_file", "path": "pipe"})
    assert obs["output"].startswith("error:")
    obs, *_ = env.step({"kind": "read_file", "path": "huge.bin"})
    assert "cut here" in obs["output"] and len(obs["output"]) <= 100_000
    obs, *_ = env.step({"kind": "edit_file", "path": "huge.bin", "old": "a", "new": "b"})
    assert obs["output"].startswith("error:") and "longer than" in obs["output"]
    obs, *_ = env.step("[" * 100000 + "]" * 100000)
    assert obs["output"].startswith("error:")
