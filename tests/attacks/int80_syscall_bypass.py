"""Attack: make a refused system call through another ABI, whose numbers differ: 64-bit code executes ``int 0x80``
with eax = 26, the 32-bit x86 ptrace(PTRACE_TRACEME), which a filter listing x86-64 numbers would not see.

Defence: `seccomp_other_abis` (the filter checks the ABI of every call first and refuses all but the native one;
x32 calls, which carry a bit in their number, too).
Honest twin: the same code outside the sandbox gets 0 (skipped where the kernel runs no 32-bit calls at all).
"""
import errno
import platform
import subprocess
import sys

import pytest

# mov eax, 26 (i386 ptrace); xor ebx, ebx (PTRACE_TRACEME); int 0x80; ret: the 32-bit ABI from 64-bit code.
I386_PTRACE = r'''
import ctypes, mmap
code = bytes.fromhex("b81a00000031dbcd80c3")
buf = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
buf.write(code)
fn = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))
print(fn())
'''


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the 32-bit x86 ABI exists only on x86-64")
def test_system_calls_of_another_abi_are_refused(box):
    outside = subprocess.run([sys.executable, "-c", I386_PTRACE], capture_output=True, text=True)
    if outside.stdout.strip() != "0":
        pytest.skip(f"this kernel runs no 32-bit syscalls (int 0x80 gave {outside.stdout.strip() or outside.stderr[-200:]})")
    (box.workspace / "i386.py").write_text(I386_PTRACE)
    r = box.run(f"{sys.executable} i386.py")
    assert r.output.splitlines()[0] == str(-errno.EPERM), r.output
