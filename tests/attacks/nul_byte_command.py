"""Attack: commands that bwrap cannot even start (a NUL byte in an argument makes Popen raise) repeated until the
env runs out of file descriptors: each used to leak the read end of bwrap's --info-fd pipe (200 such commands
exhausted the env). The env's file actions refuse NUL bytes before that (tests/test_env.py).

Defence: `no_descriptor_leak` (the pipe and the seccomp memfd are closed in a finally, also where Popen raised).
Honest twin: a command that starts closes the same descriptors (every other sandbox test).
"""
import os

import pytest


def test_a_command_bwrap_cannot_start_leaks_no_descriptor(box):
    # Popen raised (a NUL byte in an argument) after the --info-fd pipe was made: its read end used to stay open,
    # and 200 such commands ran the env out of descriptors.
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with pytest.raises(ValueError):
            box.run(["echo", "a\0b"])
    assert len(os.listdir("/proc/self/fd")) <= before
