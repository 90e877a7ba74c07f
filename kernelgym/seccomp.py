"""The seccomp filter every sandbox runs under: a few system calls that reach into other processes are refused.

Code in a sandbox runs as the same user as bubblewrap's pid 1 and, without this filter, can ptrace it: clear its
parent-death signal, copy its file descriptors out (pidfd_getfd) and live on after the grading (an attack two
reviews found; tests/attacks/hijack_pid1.py). `kill_group` kills that pid 1 through a pidfd either way; this
filter removes the means (`sandbox.PID1_MEMORY_MASK` the other one found, /proc/1/mem). Refused with EPERM (a
program that probes them gets an error, not a crash):

- ``ptrace``, ``process_vm_readv``, ``process_vm_writev``, ``pidfd_getfd``, ``process_madvise``, ``kcmp``:
  reading, writing, steering or probing another process. Debuggers (gdb, strace) do not work in the sandbox.
- ``io_uring_setup``, ``io_uring_enter``, ``io_uring_register``: io_uring's operations are not system calls, so a
  filter cannot see what they do.
- any system call of another ABI (32-bit x86 through ``int 0x80``, x32), which would bypass the numbers above.

The program is classic BPF (``struct sock_filter`` array, `linux/filter.h`), the form bubblewrap's ``--seccomp FD``
loads (as libseccomp's ``seccomp_export_bpf`` writes it). Built for x86-64 and aarch64; elsewhere `program`
returns None and sandboxes run without the filter (the pidfd kill still holds).
"""
from __future__ import annotations

import errno
import os
import platform
import struct

# linux/audit.h: AUDIT_ARCH_* of the ABI a system call was made through.
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# Syscall numbers: x86-64 from asm/unistd_64.h; aarch64 from the generic table (asm-generic/unistd.h).
_REFUSED = {
    "x86_64": {"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "io_uring_setup": 425,
               "io_uring_enter": 426, "io_uring_register": 427, "pidfd_getfd": 438, "process_madvise": 440},
    "aarch64": {"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "io_uring_setup": 425,
                "io_uring_enter": 426, "io_uring_register": 427, "pidfd_getfd": 438, "process_madvise": 440},
}
_X32_SYSCALL_BIT = 0x40000000  # x86-64 syscalls made through the x32 ABI carry this bit in their number

# linux/bpf_common.h, linux/seccomp.h
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_NR, _ARCH = 0, 4  # offsets in struct seccomp_data


def program(machine: str | None = None) -> bytes | None:
    """The filter as bytes (8 per instruction: u16 code, u8 jt, u8 jf, u32 k, native byte order) for `machine`
    (``platform.machine()`` by default), or None where no syscall table is known for it."""
    machine = machine or platform.machine()
    if machine not in _AUDIT_ARCH:
        return None
    refused = sorted(_REFUSED[machine].values())
    # Jump targets are counted from the next instruction; every refusal jumps to the last one (DENY).
    body = [("ld", _ARCH), ("arch", _AUDIT_ARCH[machine]), ("ld", _NR)]
    if machine == "x86_64":
        body.append(("jge", _X32_SYSCALL_BIT))
    body += [("jeq", nr) for nr in refused]
    body += [("allow", 0), ("deny", 0)]
    deny = len(body) - 1
    out = []
    for i, (op, k) in enumerate(body):
        to_deny = deny - i - 1
        if op == "ld":
            out.append((_LD_W_ABS, 0, 0, k))
        elif op == "arch":  # not this ABI: refuse
            out.append((_JEQ_K, 0, to_deny, k))
        elif op in ("jge", "jeq"):
            out.append((_JEQ_K if op == "jeq" else _JGE_K, to_deny, 0, k))
        elif op == "allow":
            out.append((_RET_K, 0, 0, _RET_ALLOW))
        else:
            out.append((_RET_K, 0, 0, _RET_ERRNO | errno.EPERM))
    return b"".join(struct.pack("=HBBI", *ins) for ins in out)


def program_fd() -> int | None:
    """A file descriptor (a memfd, at offset 0) holding `program()`, for ``bwrap --seccomp FD``; None where
    `program` is None. The caller passes it to bwrap and closes it."""
    prog = program()
    if prog is None:
        return None
    fd = os.memfd_create("kernelgym-seccomp", os.MFD_CLOEXEC)
    os.write(fd, prog)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
