"""Attack: code in the sandbox reads or writes the kernel's keyrings, which no namespace confines: the session
keyring of the process that started kernelgym (host secrets; bwrap's new session is a setsid, not a new keyring) and,
when kernelgym runs as root, uid 65534's user keyring that every sandbox shares (a review stored one episode's
unseen configs there and read them back in the next episode).

Defence: `seccomp_keyrings` (the seccomp filter refuses keyctl, add_key and request_key with EPERM).
Honest twin: outside the sandbox the same calls work here, so the refusal is the filter's doing.
"""
import ctypes
import os

import pytest

from kernelgym import seccomp

NR = {"x86_64": {"add_key": 248, "keyctl": 250}, "aarch64": {"add_key": 217, "keyctl": 219}}
KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING = -3, -4
KEYCTL_GET_KEYRING_ID = 0


def _code(machine: str) -> str:
    nr = NR[machine]
    return (f"import ctypes, os\nl = ctypes.CDLL(None, use_errno=True)\n"
            f"r1 = l.syscall({nr['keyctl']}, {KEYCTL_GET_KEYRING_ID}, {KEY_SPEC_SESSION_KEYRING}, 0)\n"
            f"e1 = ctypes.get_errno()\n"
            f"r2 = l.syscall({nr['add_key']}, b'user', b'kg-planted', b'x', 1, {KEY_SPEC_USER_KEYRING})\n"
            f"e2 = ctypes.get_errno()\n"
            f"print('RESULT', r1, os.strerror(e1) if r1 < 0 else '', '|', r2, os.strerror(e2) if r2 < 0 else '')\n")


def test_keyrings_are_refused_in_the_sandbox(box):
    machine = os.uname().machine
    if seccomp.program() is None or machine not in NR:
        pytest.fail("no seccomp filter for this machine's architecture: the defence does not hold here")
    r = box.run(["python", "-c", _code(machine)])
    line = next((x for x in r.output.splitlines() if x.startswith("RESULT")), r.output)
    assert line.count("Operation not permitted") == 2, line


def test_honest_twin_keyrings_work_outside_the_sandbox():
    machine = os.uname().machine
    libc = ctypes.CDLL(None, use_errno=True)
    ring = libc.syscall(NR[machine]["keyctl"], KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)
    assert ring > 0, os.strerror(ctypes.get_errno())


def test_the_keys_list_is_masked_in_the_sandbox(box):
    """Found by the second review: /proc/keys listed the host session keyring's key descriptions."""
    r = box.run(["sh", "-c", "cat /proc/keys /proc/key-users 2>&1; echo END"])
    assert "END" in r.output and "keyring" not in r.output and ": 0" not in r.output, r.output


def test_honest_twin_the_keys_list_is_readable_outside():
    assert "keyring" in open("/proc/keys").read()
