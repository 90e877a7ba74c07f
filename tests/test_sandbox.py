"""The sandbox: no network, read-only system, clean environment, limits, process-tree kill."""
import contextlib
import errno
import json
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelgym.errors import SandboxUnavailableError
from kernelgym.sandbox import BubblewrapSandbox, Limits, make_sandbox


@pytest.fixture
def box(tmp_path, require_bwrap):
    ws = tmp_path / "run" / "episodes" / "ep1" / "workspace"
    ws.mkdir(parents=True)
    return BubblewrapSandbox(ws, limits=Limits(timeout_s=30))


def test_loopback_network_blocked(box):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); print('CONNECTED')"
        # Outside the sandbox the same connection works, so the test can fail.
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        r = box.run(["python", "-c", code])
        assert "CONNECTED" not in r.output and r.returncode != 0
    finally:
        server.close()


def test_writes_outside_workspace_fail(box, tmp_path):
    r = box.run(f"echo hi > {box.workspace}/ok.txt; echo x > /etc/kernelgym-test; echo y > {tmp_path}/escape.txt")
    assert (box.workspace / "ok.txt").read_text() == "hi\n"
    assert not (tmp_path / "escape.txt").exists()
    assert "Read-only file system" in r.output or "No such file" in r.output


def test_private_and_other_episodes_invisible(box, tmp_path):
    other = tmp_path / "run" / "episodes" / "ep2" / "workspace"
    other.mkdir(parents=True)
    (other / "secret.txt").write_text("other episode")
    from kernelgym.task import DEFAULT_TASKS_ROOT
    r = box.run(f"cat {other}/secret.txt; ls {DEFAULT_TASKS_ROOT}; cat ~/.bash_history /root/.bashrc")
    assert "other episode" not in r.output
    assert "rmsnorm" not in r.output and "triton" not in r.output


def test_host_variables_invisible(box, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-123")
    monkeypatch.setenv("KG_HOST_VAR", "host-only")
    r = box.run("env")
    assert r.returncode == 0 and "PATH=" in r.output
    assert "sk-secret-123" not in r.output and "host-only" not in r.output


@pytest.mark.parametrize("backend", ["bwrap", "none"])
def test_timeout_kills_children(tmp_path, backend, require_bwrap):
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.warns(UserWarning) if backend == "none" else contextlib.nullcontext():
        box = make_sandbox(backend, ws)
    cmd = "(while true; do date +%s%N > tick; sleep 0.05; done) & sleep 60"
    r = box.run(cmd, limits=Limits(timeout_s=1.0))
    assert r.timed_out and "timed out" in r.describe()
    before = (ws / "tick").read_text()
    time.sleep(0.5)
    assert (ws / "tick").read_text() == before, "a background child survived the timeout"


def test_output_cut_says_so(box):
    r = box.run("yes | head -c 1000000", limits=Limits(max_output_bytes=1000))
    assert r.cut_bytes > 990_000 and "bytes of output cut" in r.output
    assert len(r.output) < 2000


def test_memory_limit(box):
    r = box.run(["python", "-c", "b = bytearray(4 << 30); print('ALLOCATED')"], limits=Limits(memory_bytes=1 << 30))
    assert "ALLOCATED" not in r.output and r.returncode != 0


def test_missing_bwrap_refuses_with_fix(tmp_path, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap"):
        BubblewrapSandbox(tmp_path)


def test_opt_out_warns(tmp_path):
    with pytest.warns(UserWarning, match="sandboxing is OFF"):
        make_sandbox("none", tmp_path)


def test_python_prefix_is_mounted_after_private_tmp(box, monkeypatch, tmp_path):
    # A venv under /tmp (e.g. a CI clone in /tmp) must not be hidden by the sandbox's private /tmp.
    import sys
    venv = str(tmp_path / "venv")  # wherever this suite's Python lives (on the GPU machine: under /opt)
    monkeypatch.setattr(sys, "prefix", venv)
    argv = box.argv(["true"])
    tmp_at = argv.index("/tmp")
    prefix_binds = [i for i, a in enumerate(argv) if a == venv]
    assert prefix_binds and min(prefix_binds) > tmp_at


def test_tmp_and_shm_are_size_capped(box):
    small = BubblewrapSandbox(box.workspace, limits=Limits(tmpfs_bytes=100 << 20))
    for d in ("/tmp", "/dev/shm"):
        r = small.run(f"head -c 300000000 /dev/zero > {d}/x")
        assert "No space left" in r.output and r.returncode != 0


def test_no_capabilities_and_binds_stay_read_only(box):
    # Run as root, a sandbox that kept CAP_SYS_ADMIN could remount /usr (or the venv) writable and get out.
    r = box.run("grep CapEff /proc/self/status; mount -o remount,bind,rw /usr && echo REMOUNTED; "
                "touch /usr/kg-escape && echo WROTE")
    assert "CapEff:\t0000000000000000" in r.output
    assert "REMOUNTED" not in r.output and "WROTE" not in r.output
    assert not Path("/usr/kg-escape").exists()


def test_sysctls_are_read_only(box):
    # Started by root, the sandbox is host uid 0 inside; sysctl files check only that (core_pattern -> host root).
    r = box.run("cat /proc/sys/kernel/core_pattern > /tmp/v && cat /tmp/v > /proc/sys/kernel/core_pattern "
                "&& echo WROTE_SYSCTL")
    assert "WROTE_SYSCTL" not in r.output and r.returncode != 0


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


def test_the_filter_is_built_only_for_known_machines():
    from kernelgym import seccomp
    assert seccomp.program("riscv64") is None
    for machine in ("x86_64", "aarch64"):
        prog = seccomp.program(machine)
        # load arch, check arch, load nr, [x32 bit,] one check per refused call, allow, deny: 8 bytes each
        assert len(prog) == 8 * (3 + (machine == "x86_64") + len(seccomp._REFUSED[machine]) + 2)


def test_the_memory_of_the_sandboxs_pid_1_is_out_of_reach(box):
    # bwrap's pid 1 runs as the same user and is dumpable: through /proc/1/mem a command could rewrite it (no
    # ptrace needed) and make it outlive the sandbox. Both paths to it are masked.
    probe = ("lo = int(open('/proc/1/maps').readline().split('-')[0], 16)\n"
             "for p in ('/proc/1/mem', '/proc/1/task/1/mem'):\n"
             "    try:\n"
             "        f = open(p, 'r+b', buffering=0); f.seek(lo); print(p, f.read(4))\n"
             "    except OSError as e:\n"
             "        print(p, 'refused', e.errno)\n")
    (box.workspace / "probe.py").write_text(probe)
    r = box.run(f"{sys.executable} probe.py")
    assert r.output.count("refused") == 2, r.output


def test_a_command_bwrap_cannot_start_leaks_no_descriptor(box):
    # Popen raised (a NUL byte in an argument) after the --info-fd pipe was made: its read end used to stay open,
    # and 200 such commands ran the env out of descriptors.
    import os
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with pytest.raises(ValueError):
            box.run(["echo", "a\0b"])
    assert len(os.listdir("/proc/self/fd")) <= before
