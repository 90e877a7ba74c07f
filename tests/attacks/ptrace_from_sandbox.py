"""Attack: code in the sandbox reaches into another process of the same user (bwrap's pid 1, the warm worker):
ptrace, process_vm_readv/writev, pidfd_getfd, process_madvise, kcmp; and io_uring, whose operations a filter cannot
see. Each call is made with harmless arguments; outside the sandbox ptrace(PTRACE_TRACEME) succeeds and the others
fail with their own errors, never EPERM.

Defence: `seccomp_process_access` (a seccomp filter refuses exactly these calls with EPERM).
Honest twin: the same calls outside the sandbox are not refused (the test can tell the filter from the kernel).
"""
import json
import platform
import subprocess
import sys

import pytest

SYSCALLS = r'''
import ctypes, errno, json
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr):  # PTRACE_TRACEME for ptrace (succeeds unfiltered); the others fail unfiltered with EFAULT/EINVAL/EBADF
    ctypes.set_errno(0)
    r = libc.syscall(nr, 0, 0, 0, 0, 0)
    return errno.errorcode.get(ctypes.get_errno(), "OK") if r == -1 else "OK"
print(json.dumps({name: call(nr) for name, nr in NUMBERS.items()}))
'''


@pytest.mark.skipif(platform.machine() != "x86_64", reason="syscall numbers below are x86-64's")
def test_ptrace_process_access_and_io_uring_are_refused(box):
    from kernelgym import seccomp
    numbers = seccomp._REFUSED["x86_64"]
    (box.workspace / "s.py").write_text(f"NUMBERS = {numbers!r}\n{SYSCALLS}")
    r = box.run(f"{sys.executable} s.py")
    assert json.loads(r.output.splitlines()[0]) == {name: "EPERM" for name in numbers}, r.output
    # Outside the sandbox the same calls are not refused (the test can tell the filter from the kernel).
    out = subprocess.run([sys.executable, "-c", f"NUMBERS = {numbers!r}\n{SYSCALLS}"], capture_output=True, text=True)
    assert json.loads(out.stdout)["ptrace"] == "OK" and json.loads(out.stdout)["io_uring_setup"] != "EPERM"
