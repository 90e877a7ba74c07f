"""Issue 27 item 6d: a scripted policy whose action has an unknown kind is refused when it loads, naming the kind and
the kinds there are (before, `{"kind": "shel"}` got an error observation at its step and the run exited 0)."""
import json
import subprocess
import sys

import pytest

from kernelgym.errors import PolicyConfigError
from kernelgym.policy import load_policy
from kernelgym.spaces import ACTION_KINDS


@pytest.mark.parametrize("actions, named", [
    ([{"kind": "shel", "cmd": "ls"}], "actions[0] {'kind': 'shel', 'cmd': 'ls'} has unknown kind 'shel' "
                                      "(did you mean 'shell'?)"),
    ([{"kind": "shell", "cmd": "ls"}, {"kind": 7}], "actions[1] {'kind': 7} has unknown kind 7"),
    ([{"cmd": "ls"}], "actions[0] {'cmd': 'ls'} has no 'kind'"),
    ([{"kind": True}], "unknown kind True"),
])
def test_an_unknown_kind_is_refused_at_load_naming_it_and_the_kinds(actions, named):
    with pytest.raises(PolicyConfigError) as e:
        load_policy("scripted", actions=actions)
    assert named in str(e.value), str(e.value)
    assert f"the kinds are {', '.join(ACTION_KINDS)}" in str(e.value)


def test_known_kinds_by_name_or_index_load_and_replay():
    policy = load_policy("scripted", actions=[{"kind": "shell", "cmd": "ls"}, {"kind": 3, "path": "kernel.py"}])
    policy.reset({"prompt": "", "output": ""}, {})
    assert [policy.act({}, {}) for _ in range(3)] == [{"kind": "shell", "cmd": "ls"},
                                                       {"kind": 3, "path": "kernel.py"}, {"kind": "submit"}]


def test_a_long_action_is_shown_cut_in_the_message():
    with pytest.raises(PolicyConfigError, match=r"actions\[0\] \{'kind': 'write', 'content': 'xxx.*\.\.\. has "
                                                r"unknown kind 'write'") as e:
        load_policy("scripted", actions=[{"kind": "write", "content": "x" * 10_000}])
    assert len(str(e.value)) < 400


def test_kernelgym_run_refuses_it_before_any_episode_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kernelgym.cli", "run", "--task", "triton-softmax", "--policy",
                           "scripted", "--policy-config", json.dumps({"actions": [{"kind": "shel", "cmd": "ls"}]}),
                           "--run-dir", str(tmp_path / "runs")], capture_output=True, text=True, timeout=300)
    out = " ".join((proc.stdout + proc.stderr).split())  # rich folds long lines
    assert proc.returncode == 2, out
    assert "unknown kind 'shel'" in out and "bench" in out
    assert not (tmp_path / "runs").exists()  # refused before a run directory was made
