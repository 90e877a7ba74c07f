"""``python reaper.py PARENT_PID [--remove DIR] [--keep-fd N] CMD...``: run an agent CLI so that it dies with the kernelgym process
that started it, and its private directory DIR with it.

`CLIAgentPolicy` starts this script (by path, with ``python -I``: it imports nothing of kernelgym) as the leader of a
new process group, having set PR_SET_PDEATHSIG(SIGTERM) on it between fork and exec. It runs CMD in its own group and
waits for it, exiting with CMD's status (128 + N for a CMD killed by signal N).

A SIGTERM while the parent is alive is the launcher stopping the group (`_kill_group` signals the whole group, CMD
included): it is ignored here, and this process exits when CMD does. A SIGTERM once the parent is gone (getppid()
changed: the kernel reparents the process before it sends the parent-death signal) kills the whole group with
SIGKILL: CMD and every helper it forked. A parent-death signal set on the CLI alone would miss those helpers: Codex's
npm launcher (node) runs the codex binary as its child. Before that kill, DIR is removed: the launcher, killed, cannot
remove it, and CLIs write secrets there (Codex snapshots its environment, the API key in it, into DIR/.codex).
``--keep-fd N`` passes the inherited descriptor N on to CMD (the seccomp program bwrap reads, `--seccomp N`).
"""
import os
import shutil
import signal
import subprocess
import sys


def main(argv: list[str]) -> int:
    """Run the command in this process group; kill the group (after removing ``--remove DIR``) when the process
    ``argv[0]`` (our parent) is gone."""
    parent, cmd, remove, keep = int(argv[0]), argv[1:], None, []
    if cmd[:1] == ["--remove"]:
        remove, cmd = cmd[1], cmd[2:]
    if cmd[:1] == ["--keep-fd"]:
        keep, cmd = [int(cmd[1])], cmd[2:]

    def kill_group_if_orphaned(signum=None, frame=None) -> None:
        if os.getppid() != parent:
            if remove:
                shutil.rmtree(remove, ignore_errors=True)
            os.killpg(0, signal.SIGKILL)  # this process included

    signal.signal(signal.SIGTERM, kill_group_if_orphaned)
    kill_group_if_orphaned()  # the parent died before the handler was in place
    try:
        child = subprocess.Popen(cmd, pass_fds=keep)
    except OSError as e:
        print(f"kernelgym reaper: cannot start {cmd[0]!r}: {e}", file=sys.stderr, flush=True)
        return 127
    rc = child.wait()  # retried by Python after the handler runs (PEP 475)
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
