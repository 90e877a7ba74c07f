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
- ``keyctl``, ``add_key``, ``request_key``: the kernel's keyrings are not namespaced. A sandbox inherits the session
  keyring of the process that started kernelgym (host secrets such as Kerberos tickets live there), and every
  sandbox of a root-started kernelgym shares uid 65534's user keyring, a channel between episodes (a review read
  one episode's unseen configs back from another's). Docker's default profile refuses them for the same reason.
- any system call of another ABI (32-bit x86 through ``int 0x80``, x32), which would bypass the numbers above.
- ``socket`` and ``socketpair`` of any address family but ``AF_UNIX``, ``AF_INET``, ``AF_INET6`` and ``AF_NETLINK``
  (refused with EAFNOSUPPORT): the sandbox's network namespace confines those four, not ``AF_VSOCK``, which reached
  the host of a virtual machine, nor the rest (Bluetooth, CAN, ...), which a kernel has no use for.

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
               "io_uring_enter": 426, "io_uring_register": 427, "pidfd_getfd": 438, "process_madvise": 440,
               "add_key": 248, "request_key": 249, "keyctl": 250},
    "aarch64": {"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "io_uring_setup": 425,
                "io_uring_enter": 426, "io_uring_register": 427, "pidfd_getfd": 438, "process_madvise": 440,
                "add_key": 217, "request_key": 218, "keyctl": 219},
}
_X32_SYSCALL_BIT = 0x40000000  # x86-64 syscalls made through the x32 ABI carry this bit in their number

# Socket calls whose first argument (the address family) is checked, and the families allowed (linux/socket.h).
_SOCKET_CALLS = {"x86_64": {"socket": 41, "socketpair": 53}, "aarch64": {"socket": 198, "socketpair": 199}}
AF_ALLOWED = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16}

# linux/bpf_common.h, linux/seccomp.h
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (args[0]'s low 32 bits: little-endian machines)


def _assemble(body: list[tuple]) -> bytes:
    """Classic BPF from ``(op, k, if_true, if_false)`` tuples, labels as ``("label", name)``; a jump target is a label
    or None (the next instruction). Ops: ``ld`` (a word of seccomp_data at offset k), ``jeq``/``jge`` (compare with
    k), ``ret`` (return k)."""
    at, n = {}, 0
    for entry in body:
        if entry[0] == "label":
            at[entry[1]] = n
        else:
            n += 1
    out, i = [], 0
    for entry in body:
        if entry[0] == "label":
            continue
        op, k, *targets = entry
        jump = [0 if t is None else at[t] - i - 1 for t in (targets + [None, None])[:2]]
        code = {"ld": _LD_W_ABS, "jeq": _JEQ_K, "jge": _JGE_K, "ret": _RET_K}[op]
        out.append(struct.pack("=HBBI", code, *(jump if op in ("jeq", "jge") else (0, 0)), k))
        i += 1
    return b"".join(out)


def program(machine: str | None = None) -> bytes | None:
    """The filter as bytes (8 per instruction: u16 code, u8 jt, u8 jf, u32 k, native byte order) for `machine`
    (``platform.machine()`` by default), or None where no syscall table is known for it."""
    machine = machine or platform.machine()
    if machine not in _AUDIT_ARCH:
        return None
    body = [("ld", _ARCH), ("jeq", _AUDIT_ARCH[machine], None, "deny"), ("ld", _NR)]
    if machine == "x86_64":
        body.append(("jge", _X32_SYSCALL_BIT, "deny", None))
    body += [("jeq", nr, "deny", None) for nr in sorted(_REFUSED[machine].values())]
    body += [("jeq", nr, "family", None) for nr in sorted(_SOCKET_CALLS[machine].values())]
    body += [("ret", _RET_ALLOW), ("label", "family"), ("ld", _ARG0)]
    body += [("jeq", af, "allow", None) for af in sorted(AF_ALLOWED.values())]
    body += [("ret", _RET_ERRNO | errno.EAFNOSUPPORT), ("label", "allow"), ("ret", _RET_ALLOW),
             ("label", "deny"), ("ret", _RET_ERRNO | errno.EPERM)]
    return _assemble(body)


_PROGRAM: list[bytes | None] = []


def program_fd() -> int | None:
    """A file descriptor (a memfd, at offset 0) holding `program()`, for ``bwrap --seccomp FD``; None where
    `program` is None. The caller passes it to bwrap and closes it. The program is assembled once per process."""
    if not _PROGRAM:
        _PROGRAM.append(program())
    prog = _PROGRAM[0]
    if prog is None:
        return None
    fd = os.memfd_create("kernelgym-seccomp", os.MFD_CLOEXEC)
    os.write(fd, prog)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
