"""Attack: code in a sandbox that kernelgym started as root (the default in containers, and CI's machine) acts as host
root: reads /etc/shadow, leaves a setuid-root program in the workspace for later, or finds its uid mapped to host 0.

Defence: `unprivileged_sandbox_user` (bwrap mounts without a user namespace, then setpriv drops to host uid 65534 with
every capability cleared before the command). Run by a non-root user the sandbox is that user and the attack holds
trivially. Honest twin: the workspace stays readable and writable on both sides (tests/test_sandbox_user.py).
"""
import os
import stat

from kernelgym.sandbox import BubblewrapSandbox, Limits


def test_a_sandbox_started_by_root_is_not_host_root(tmp_path, require_bwrap):
    box = BubblewrapSandbox(tmp_path)
    r = box.run("cat /etc/shadow >/dev/null 2>&1 && echo READ_SHADOW; cp /bin/true suid && chmod u+s suid; id -u", limits=Limits(timeout_s=30))
    assert "READ_SHADOW" not in r.output, r.output
    uid_inside = int(r.output.split()[-1])
    assert uid_inside != 0 or os.getuid() != 0, r.output  # started by root, the sandbox's user is not root
    suid = tmp_path / "suid"
    assert suid.exists() and os.stat(suid).st_mode & stat.S_ISUID, r.output  # the chmod took ...
    assert os.stat(suid).st_uid != 0  # ... on a file that is not root's
