"""Attack: started by root, the sandbox is host uid 0 inside, and sysctl files check only the uid, not capabilities:
a command writes kernel.core_pattern (a pipe to a program, which the kernel then runs as host root on a crash).
Here it writes the value back unchanged, so that a failure of the defence changes nothing on the host.

Defence: `read_only_sysctls` (/proc/sys and /proc/sysrq-trigger are bound read-only in every sandbox).
Honest twin: reading a sysctl works (the first half of the command).
"""


def test_sysctls_are_read_only(box):
    # Started by root, the sandbox is host uid 0 inside; sysctl files check only that (core_pattern -> host root).
    r = box.run("cat /proc/sys/kernel/core_pattern > /tmp/v && cat /tmp/v > /proc/sys/kernel/core_pattern "
                "&& echo WROTE_SYSCTL")
    assert "WROTE_SYSCTL" not in r.output and r.returncode != 0
