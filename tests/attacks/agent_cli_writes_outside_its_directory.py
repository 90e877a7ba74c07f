"""Attack: the model behind an agent CLI (the real Claude Code and Codex, each driven here by a fake model API) has the
CLI's own shell write outside the CLI's private directory: into the episode's workspace (kernel.py, to submit a
kernel the env never saw), the run directory (trajectories.jsonl, results), kernelgym's sources, this Python's venv,
the system and the host's /tmp (the sandbox's /tmp is a folder of the private directory). The CLI's flags that switch
its shell off are taken as failed (Claude Code's Bash tool, Codex's exec_command tool are switched back on, Codex's
own sandbox off), so only the sandbox stands in the way.

Defence: `agent_cli_private_dir_only` (the CLI runs in a bubblewrap sandbox of its own: a read-only system, its
own installation, this Python and relay.py bound read-only, only its private 0700 directory writable, nothing else
of the host mounted).
Honest twin: in the same session a write into its own $HOME succeeds (the shell ran: the test can fail), and the
episode still runs to its submit through the MCP tools, graded 120.
"""
import os
from pathlib import Path

import kernelgym
from kernelgym.agents import relay

import pytest

from tests.attacks._agent_cli import CLIS, shell_attempts

MARK = "kernelgym-attack-was-here"


@pytest.mark.parametrize("cli", list(CLIS))
def test_cli_shell_writes_land_nowhere_outside_its_directory(cli, tmp_path, monkeypatch, require_bwrap):
    run = tmp_path / "run"
    host_tmp = Path("/tmp") / f"kernelgym-attack-{os.getpid()}-{os.urandom(4).hex()}"
    targets = {
        "run directory": run / "pwned.txt",
        "kernelgym's sources": Path(kernelgym.__file__).parent / "pwned.txt",
        "relay.py (bound read-only)": Path(relay.__file__),
        "the venv": Path(os.path.realpath(os.sys.prefix)) / "pwned.txt",
        "the system": Path("/usr/lib/pwned.txt"),
        "the host's /tmp": host_tmp,
    }
    before = {p: p.read_bytes() if p.is_file() else None for p in targets.values()}
    commands = [f"echo {MARK} >> {p} && echo WROTE || echo REFUSED" for p in targets.values()]
    # the workspace's kernel.py: the env's own path, found by the shell itself (it is nowhere in the sandbox)
    commands.append(f"for f in {run}/episodes/*/workspace/kernel.py; do echo {MARK} >> $f && echo WROTE; done; "
                    f"echo done")
    commands.append(f"echo {MARK} > $HOME/mine.txt && cat $HOME/mine.txt")  # the honest twin
    try:
        outputs, run, result = shell_attempts(tmp_path, monkeypatch, commands, cli=cli)
    finally:
        host_tmp.unlink(missing_ok=True)
    for (what, path), out in zip(targets.items(), outputs):
        if path != host_tmp:  # the sandbox's /tmp is a folder of the private directory: written there, not here
            assert "WROTE" not in out and "REFUSED" in out, f"the CLI's shell wrote to {what}: {out!r}"
        after = path.read_bytes() if path.is_file() else None
        assert after == before[path], f"{path} ({what}) changed"
    assert "WROTE" not in outputs[len(targets)]
    (kernel,) = run.glob("episodes/*/workspace/kernel.py")
    assert MARK not in kernel.read_text()
    assert MARK in outputs[-1], f"the CLI's shell did not run at all: {outputs[-1]!r}"
    assert result["reward"] == 120.0 and result["terminated"]
