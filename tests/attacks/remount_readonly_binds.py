"""Attack: run by root, the sandbox is uid 0 inside; with CAP_SYS_ADMIN kept, a command remounts the read-only binds
(the host's /usr, the venv) writable and writes to the host.

Defence: `drop_all_capabilities` (--cap-drop ALL in every sandbox, shell commands included).
Honest twin: none (no command needs a capability).
"""
from pathlib import Path


def test_no_capabilities_and_binds_stay_read_only(box):
    # Run as root, a sandbox that kept CAP_SYS_ADMIN could remount /usr (or the venv) writable and get out.
    r = box.run("grep CapEff /proc/self/status; mount -o remount,bind,rw /usr && echo REMOUNTED; "
                "touch /usr/kg-escape && echo WROTE")
    assert "CapEff:\t0000000000000000" in r.output
    assert "REMOUNTED" not in r.output and "WROTE" not in r.output
    assert not Path("/usr/kg-escape").exists()
