"""Attack: the model behind an agent CLI (the real Claude Code and Codex, each driven here by a fake model API) has the
CLI's own shell read what the env keeps from it: the run directory (trajectories.jsonl, the other episodes, the
transcripts with the task), the episode's workspace and the task folders (the reference implementation, task.yaml),
read straight from the host instead of through the env's tools. The CLI's flags that switch its shell off are taken
as failed (Claude Code's Bash tool, Codex's exec_command tool are switched back on, Codex's own sandbox off), so only
the sandbox stands in the way.

Defence: `agent_cli_mount_allowlist` (the CLI's sandbox mounts an allowlist: the system, this Python, the CLI's own
installation, relay.py and its private directory; not the run directory, the workspaces, the task folders or the
repository).
Honest twin: in the same session its own $HOME is listed (the shell ran: the test can fail); the workspace's
kernel.py comes back through the MCP tools as usual (tests/test_cli_agents.py), and the episode is graded 120.
"""
from pathlib import Path

import kernelgym
from kernelgym.task import DEFAULT_TASKS_ROOT

import pytest

from tests.attacks._agent_cli import CLIS, OWN_FILE, shell_attempts


@pytest.mark.parametrize("cli", list(CLIS))
def test_cli_shell_sees_no_run_directory_workspace_or_task(cli, tmp_path, monkeypatch, require_bwrap):
    run = tmp_path / "run"
    tasks = DEFAULT_TASKS_ROOT
    assert tasks.is_dir()
    commands = [
        f"ls {run}/episodes/*/workspace/kernel.py {run}/trajectories.jsonl {run}/agent_transcripts 2>&1; echo END",
        f"cat {tasks}/*/task.yaml {tasks}/*/*/task.yaml 2>&1 | head -5; echo END",
        f"ls {tmp_path} 2>&1; echo END",
        "ls -a $HOME",  # the honest twin
    ]
    outputs, run, result = shell_attempts(tmp_path, monkeypatch, commands, cli=cli)
    assert list(run.glob("episodes/*/workspace/kernel.py")) and (run / "trajectories.jsonl").is_file()
    workspace, task, parent, own = outputs
    assert "No such file or directory" in workspace and "def " not in workspace, workspace
    assert "No such file or directory" in task and "name:" not in task, task
    assert "No such file or directory" in parent and "run" not in parent.split(), parent
    assert OWN_FILE[cli] in own.split(), f"the CLI's shell did not run at all: {own!r}"
    assert result["reward"] == 120.0 and result["terminated"]
