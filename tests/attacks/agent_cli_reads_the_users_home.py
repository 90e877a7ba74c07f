"""Attack: the model behind an agent CLI (the real Claude Code and Codex, each driven here by a fake model API) has the
CLI's own shell read the home directory of the user who runs kernelgym: their files and keys (~/.ssh, the CLIs' own
logins in ~/.claude and ~/.codex) and kernelgym's private unseen store (~/.local/share/kernelgym/private by default:
the secret the unseen configs are drawn with). The CLI's flags that switch its shell off are taken as failed (Claude
Code's Bash tool, Codex's exec_command tool are switched back on, Codex's own sandbox off), so only the sandbox
stands in the way.

Defence: `agent_cli_no_user_home` (the CLI's sandbox does not mount the user's home: its $HOME is its private
directory, and the CLI's installation is bound by itself, never a folder that holds the home).
Honest twin: the same file read outside the sandbox holds the secret (the test can fail), and in the same session
the CLI's own $HOME is read (the shell ran).
"""
import os
import secrets
from pathlib import Path

from kernelgym.unseen import private_dir

import pytest

from tests.attacks._agent_cli import CLIS, OWN_FILE, shell_attempts


@pytest.mark.parametrize("cli", list(CLIS))
def test_cli_shell_sees_nothing_of_the_users_home(cli, tmp_path, monkeypatch, require_bwrap):
    home = Path.home()
    secret = secrets.token_hex(16)
    planted = home / f".kernelgym-attack-{os.getpid()}-{secret[:8]}"
    planted.write_text(secret)
    planted.chmod(0o644)  # readable by any user: only the mount keeps it out
    try:
        assert planted.read_text() == secret  # the honest twin: outside the sandbox it is there
        commands = [f"cat {planted} 2>&1; echo END",
                    f"ls -a {home} 2>&1 | head -50; echo END",
                    f"ls -R {private_dir()} 2>&1 | head; echo END",
                    f"ls -a $HOME/{OWN_FILE[cli]} >/dev/null && echo OWN-HOME-READ"]
        outputs, run, result = shell_attempts(tmp_path, monkeypatch, commands, cli=cli)
    finally:
        planted.unlink()
    read, listing, store, own = outputs
    assert secret not in read and "No such file or directory" in read, read
    assert planted.name not in listing, listing
    assert "secret" not in store.split() and "No such file or directory" in store, store
    assert "OWN-HOME-READ" in own, f"the CLI's shell did not run at all: {own!r}"
    assert result["reward"] == 120.0 and result["terminated"]
