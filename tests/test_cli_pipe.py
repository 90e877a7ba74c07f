"""`kernelgym` writing into a pipe whose reader went away (issue 27 item 6a: `kernelgym list --format markdown | head`
ended in a BrokenPipeError traceback): it exits quietly, code 141 (128 + SIGPIPE) or 0."""
import shutil
import subprocess
import sys

import pytest

from kernelgym import cli

KERNELGYM = [sys.executable, "-m", "kernelgym.cli"]


def test_a_reader_gone_before_the_first_write_exits_141_without_a_traceback():
    # The reading end is closed before the command prints (it takes a second to import): every write fails, as
    # `| head` does to a long table once head has its lines. Without the fix: a traceback and exit code 1.
    proc = subprocess.Popen(KERNELGYM + ["list", "--format", "markdown"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == cli.EXIT_STDOUT_CLOSED
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


@pytest.mark.skipif(shutil.which("head") is None, reason="no head(1) here")
def test_piped_into_head_1_gives_the_first_line_and_no_traceback():
    cmd = " ".join(KERNELGYM) + " list --format markdown | head -1"
    proc = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd}"], capture_output=True, text=True, timeout=120)
    assert proc.stdout == "| env id | kind | language | difficulty | hardware |\n"
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    # head may take the whole table in one read (exit 0) or leave the rest to a closed pipe (141)
    assert proc.returncode in (0, cli.EXIT_STDOUT_CLOSED), proc.stderr


def test_the_rich_table_exits_141_too():
    # Rich's console exits 1 where stdout is closed (found by the issue-27 audit): the table exits as the markdown does.
    proc = subprocess.Popen(KERNELGYM + ["list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == cli.EXIT_STDOUT_CLOSED, err
    assert "Traceback" not in err, err


def test_a_broken_pipe_elsewhere_is_not_hidden(monkeypatch):
    # Only a closed stdout is quiet: a pipe to a child process (an agent CLI's stdin) that breaks is a real error.
    def broken(args):
        raise BrokenPipeError("the agent's stdin")
    monkeypatch.setattr(cli, "cmd_list", broken)
    with pytest.raises(BrokenPipeError, match="agent's stdin"):
        cli.main(["list"])
