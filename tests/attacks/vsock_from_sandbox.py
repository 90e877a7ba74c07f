"""Attack: code in the sandbox opens a socket of a family its network namespace does not confine: AF_VSOCK reaches
the host of a virtual machine (a review's connect to CID 2 was answered with a reset), and Bluetooth, CAN or other
families reach devices; none of them are a kernel's business.

Defence: `seccomp_socket_families` (the seccomp filter refuses `socket` and `socketpair` of every family but AF_UNIX,
AF_INET, AF_INET6 and AF_NETLINK, with EAFNOSUPPORT, so the program gets a plain error).
Honest twin: AF_UNIX and AF_INET sockets still open inside the sandbox (inside its empty network namespace).
"""
import socket

import pytest

from kernelgym import seccomp

# Families that open on this kind of machine outside the sandbox (so the test can fail), with a type each accepts.
FAMILIES = {"AF_VSOCK": (40, socket.SOCK_STREAM), "AF_PACKET": (17, socket.SOCK_DGRAM)}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_unconfined_socket_families_are_refused(box, name):
    if seccomp.program() is None:
        pytest.fail("no seccomp filter for this machine's architecture: the defence does not hold here")
    family, kind = FAMILIES[name]
    code = (f"import socket, errno\ntry:\n    socket.socket({family}, {int(kind)})\n    print('OPENED')\n"
            f"except OSError as e:\n    print('REFUSED', errno.errorcode.get(e.errno))\n")
    r = box.run(["python", "-c", code])
    assert "REFUSED EAFNOSUPPORT" in r.output, r.output


def test_honest_twin_unix_and_inet_sockets_open(box):
    code = ("import socket\nsocket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()\n"
            "socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()\nsocket.socketpair()\nprint('OK')\n")
    r = box.run(["python", "-c", code])
    assert "OK" in r.output, r.output


def test_vsock_opens_outside_the_sandbox_here():
    # Where it does not (no vsock module), the refusal above proves nothing: say so rather than pass quietly.
    socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM).close()
