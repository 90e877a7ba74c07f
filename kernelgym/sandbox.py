"""Run shell commands in a sandboxed workspace.

Two backends, one shared helper (`run_limited`) for what both need: rlimits, the whole
process group killed on timeout, and output cut to its head and tail with a note of what
was cut.

- `BubblewrapSandbox` (default): bubblewrap with every namespace unshared (no network,
  loopback included), a cleared environment, a read-only system, only the workspace
  writable, and nothing of the host's home, the task directories, the run directory or
  other episodes visible: the mounts are an allowlist, not a blocklist.
- `UnsandboxedRunner`: the same limits and clean environment without isolation, only when
  the user opts out explicitly (``sandbox="none"``); it warns.
"""
from __future__ import annotations

import collections
import glob
import json
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from kernelgym import seccomp
from kernelgym.cgroups import SandboxCgroup
from kernelgym.errors import SandboxUnavailableError

#: Host variables passed into the sandbox: device selection and safety switches only, never keys.
PASSTHROUGH_ENV = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
                   "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")

#: This Python, as a normalized absolute path: started as ``../.venv/bin/python``, sys.executable holds a ``..``
#: through a directory the sandbox does not mount, and bwrap could not start it.
PYTHON = os.path.abspath(sys.executable)

#: bwrap arguments masking the memory of the sandbox's pid 1 (bwrap itself: dumpable, same uid). Through
#: /proc/1/mem a review rewrote its code without ptrace (which the seccomp filter refuses), to clear its
#: parent-death signal and outlive the sandbox.
PID1_MEMORY_MASK = ["--ro-bind", "/dev/null", "/proc/1/mem", "--ro-bind", "/dev/null", "/proc/1/task/1/mem"]

INSTALL_HINT = ("Install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: `sudo dnf install "
                "bubblewrap`), or opt out of sandboxing explicitly with sandbox='none' "
                "(CLI: --no-sandbox), which runs agent commands unisolated on this machine.")


@dataclass
class Limits:
    """Resource limits for one command."""

    timeout_s: float = 120.0
    """Wall-clock limit; on expiry the whole process tree is killed."""
    memory_bytes: int | None = 16 << 30
    """Address-space limit (RLIMIT_AS). Not applied when a GPU is passed in: GPU runtimes reserve
    far more virtual address space than they use."""
    max_output_bytes: int = 32_000
    """Output kept (head and tail halves); the rest is cut with a note."""
    max_file_bytes: int = 2 << 30
    """Largest file a command may write (RLIMIT_FSIZE)."""
    tmpfs_bytes: int = 2 << 30
    """Size of the sandbox's private /tmp and of its /dev/shm (each)."""
    pids_max: int | None = 1024
    """Processes and threads the command may have at once, all of its tree counted (a cgroup: kernelgym/cgroups.py);
    None: no limit. Where this machine cannot make cgroups, not applied (`cgroups.unavailable_reason`)."""


@dataclass
class CommandResult:
    """What one command did. `output` is stdout and stderr merged, decoded as UTF-8 (errors replaced)."""

    output: str
    returncode: int
    timed_out: bool = False
    cut_bytes: int = 0
    elapsed_s: float = 0.0

    def describe(self) -> str:
        """The output followed by a status line, as an observation shows it."""
        status = (f"[timed out after {self.elapsed_s:.1f} s; process tree killed]" if self.timed_out
                  else f"[exit code {self.returncode}, {self.elapsed_s:.2f} s]")
        return f"{self.output}{'' if self.output.endswith(chr(10)) or not self.output else chr(10)}{status}"


def _set_limits(limits: Limits, gpu: bool, group: SandboxCgroup | None = None):
    def apply():
        if group is not None:
            group.join()  # before exec: everything the command starts counts
        if limits.memory_bytes and not gpu:
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.max_file_bytes, limits.max_file_bytes))
        cpu = int(limits.timeout_s * 4) + 10  # several threads may burn CPU in parallel
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def run_limited(argv: list[str], *, env: dict[str, str], cwd: str | Path, limits: Limits,
                gpu: bool = False, bwrap: bool = False) -> CommandResult:
    """Run `argv` in a new process group under `limits`; kill the group on timeout (`kill_group`). With `bwrap`,
    `argv` starts bubblewrap (see `_spawn`).

    Output is read as it comes (a command printing forever costs no memory): the first and last
    `max_output_bytes / 2` bytes are kept and the count of bytes cut is reported.
    """
    start = time.monotonic()
    group = _cgroup(limits, gpu)
    try:
        proc = _spawn(argv, bwrap, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                      env=env, cwd=str(cwd), start_new_session=True, preexec_fn=_set_limits(limits, gpu, group))
    except BaseException:
        if group is not None:
            group.destroy()
        raise
    half = max(limits.max_output_bytes // 2, 1)
    head = bytearray()
    tail: collections.deque[bytes] = collections.deque()
    counts = {"tail": 0, "total": 0}

    def reader():
        while chunk := proc.stdout.read1(65536):
            counts["total"] += len(chunk)
            room = half - len(head)
            if room > 0:
                head.extend(chunk[:room])
                chunk = chunk[room:]
            if chunk:
                tail.append(chunk)
                counts["tail"] += len(chunk)
                while counts["tail"] - len(tail[0]) >= half:
                    counts["tail"] -= len(tail.popleft())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    timed_out = False
    try:
        proc.wait(timeout=limits.timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        kill_group(proc)  # children that outlive the shell must not leak (also on success)
        notes = group.hit_limits() if group is not None else []
        if group is not None:
            group.destroy()
    thread.join(timeout=5)
    tail_bytes = b"".join(tail)[-half:] if tail else b""
    cut = counts["total"] - len(head) - len(tail_bytes)
    text = head.decode("utf-8", "replace")
    if cut > 0:
        text += f"\n[... {cut} bytes of output cut ...]\n"
    text += tail_bytes.decode("utf-8", "replace")
    if notes:
        text += "".join(f"\n[{note}]" for note in notes) + "\n"
    return CommandResult(output=text, returncode=proc.returncode, timed_out=timed_out, cut_bytes=max(cut, 0),
                         elapsed_s=time.monotonic() - start)


def _popen(argv: list[str], env: dict[str, str], cwd: Path, limits: Limits, gpu: bool,
           bwrap: bool = False) -> subprocess.Popen:
    """A long-lived process with text pipes, in its own process group and cgroup, under `limits` (`bwrap`: see
    `_spawn`). `kill_group` removes the cgroup."""
    group = _cgroup(limits, gpu)
    try:
        proc = _spawn(argv, bwrap, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                      cwd=str(cwd), text=True, bufsize=1, start_new_session=True,
                      preexec_fn=_set_limits(limits, gpu, group))
    except BaseException:
        if group is not None:
            group.destroy()
        raise
    proc.sandbox_cgroup = group
    return proc


def _cgroup(limits: Limits, gpu: bool) -> SandboxCgroup | None:
    """The command's cgroup: `limits.pids_max` processes, and (without a GPU, as RLIMIT_AS) `limits.memory_bytes`;
    None where there is no limit to set or cgroups cannot be made here."""
    if limits.pids_max is None:
        return None
    return SandboxCgroup.create(limits.pids_max, None if gpu else limits.memory_bytes)


def _spawn(argv: list[str], bwrap: bool, **popen_kwargs) -> subprocess.Popen:
    """`subprocess.Popen(argv, ...)`. Where `argv` starts bubblewrap (`bwrap`), the sandbox gets the seccomp filter
    of `kernelgym.seccomp` (``--seccomp``: no ptrace, no io_uring), and bwrap is asked for the host pid of the
    sandbox's pid 1 (``--info-fd``), a pidfd of which is kept as ``proc.sandbox_init`` for `kill_group`: where
    ptrace is possible (no filter for this machine), code in the sandbox can take pid 1 over (same uid), clear
    its parent-death signal and make the outer bwrap exit while it lives on, out of bwrap's process group."""
    if not bwrap:
        return subprocess.Popen(argv, **popen_kwargs)
    r, w = os.pipe()
    try:
        filter_fd = seccomp.program_fd()
        extra, fds = ["--info-fd", str(w)], [w]
        if filter_fd is not None:
            extra += ["--seccomp", str(filter_fd)]
            fds.append(filter_fd)
        try:
            proc = subprocess.Popen([argv[0], *extra, *argv[1:]], pass_fds=fds, **popen_kwargs)
        finally:
            for fd in fds:
                os.close(fd)
        proc.sandbox_init = _init_pidfd(r)
    finally:  # also where Popen raised (a NUL byte in an argument): no descriptor may leak per command
        os.close(r)
    return proc


def _init_pidfd(info: int, timeout_s: float = 60.0) -> int | None:
    """A pidfd of the process named by bwrap's ``--info-fd`` JSON (``{"child-pid": N}``) read from `info`, or None
    where bwrap exited first (it failed to start the sandbox) or said nothing in `timeout_s`."""
    data, deadline = b"", time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([info], [], [], max(deadline - time.monotonic(), 0))
        chunk = os.read(info, 4096) if ready else b""
        if not chunk:
            return None
        data += chunk
        try:
            return os.pidfd_open(int(json.loads(data)["child-pid"]))
        except (ValueError, KeyError, TypeError):
            continue  # not the whole JSON yet
        except OSError:
            return None  # already gone: with it, the whole sandbox
    return None


def clean_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A fresh environment: PATH with this Python's bin first, no host variables but `PASSTHROUGH_ENV`."""
    env = {
        "PATH": os.pathsep.join([str(Path(PYTHON).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(home), "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1", "TRITON_CACHE_DIR": "/tmp/triton-cache",
    }
    env.update({k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ})
    env.update(extra or {})
    return env


def gpu_devices() -> list[str]:
    """Device nodes a GPU job needs: NVIDIA (/dev/nvidia*) or AMD (/dev/kfd, /dev/dri)."""
    nodes = glob.glob("/dev/nvidia*") + glob.glob("/dev/nvidia-caps/*") + glob.glob("/dev/kfd") + glob.glob("/dev/dri")
    return sorted(set(nodes))


@dataclass
class _Backend:
    """What both backends are given (see `BubblewrapSandbox` for the meaning of each field)."""

    workspace: Path
    readonly: list[Path] = field(default_factory=list)
    gpu: bool = False
    env: dict[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self):
        self.workspace = Path(self.workspace).resolve()
        self.readonly = [Path(p).resolve() for p in self.readonly]  # bwrap needs absolute source paths

    def _env(self, extra: dict[str, str] | None) -> dict[str, str]:
        """The command's environment: `clean_env` plus this backend's and the call's variables."""
        return clean_env(self.workspace, {**self.env, **(extra or {})})


@dataclass
class BubblewrapSandbox(_Backend):
    """bubblewrap isolation for one workspace.

    Args:
        workspace: the only writable directory, also the working directory and HOME.
        readonly: extra paths bound read-only at the same place (e.g. the grader's harness file).
        gpu: pass the GPU device nodes in.
        env: extra environment variables (e.g. TRITON_INTERPRET=1).
        limits: default limits per command.

    Raises:
        SandboxUnavailableError: bubblewrap is not installed or cannot create namespaces here.
    """

    def __post_init__(self):
        super().__post_init__()
        self.bwrap = shutil.which("bwrap")
        if self.bwrap is None:
            raise SandboxUnavailableError(f"bubblewrap (`bwrap`) is not on PATH. {INSTALL_HINT}")
        probe = subprocess.run([self.bwrap, "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True,
                               text=True)
        if probe.returncode != 0:
            raise SandboxUnavailableError(f"bubblewrap cannot create a sandbox here: {probe.stderr.strip()}. "
                                          f"It needs unprivileged user namespaces (sysctl "
                                          f"kernel.unprivileged_userns_clone=1) or root. {INSTALL_HINT}")

    def _mounts(self) -> list[str]:
        args = []
        for top in ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt"):
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                args += ["--ro-bind", top, top]
        # Private, size-capped /tmp and /dev/shm (RAM-backed: RLIMIT_AS does not cover them).
        # /proc/sys and /proc/sysrq-trigger read-only: a sandbox started by root is host uid 0 inside, and sysctl
        # files check only that (kernel.core_pattern runs a program as host root), capabilities or not.
        args += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", *PID1_MEMORY_MASK,
                 "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
                 "--dev", "/dev", "--size", str(self.limits.tmpfs_bytes), "--tmpfs", "/tmp",
                 "--size", str(self.limits.tmpfs_bytes), "--tmpfs", "/dev/shm"]
        # The Python running kernelgym (a venv or a pyenv build may live under a hidden home, or under /tmp:
        # bound after the private /tmp so it is not hidden by it).
        for p in sorted({sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}):
            if not p.startswith(("/usr/", "/etc/", "/opt/")) and p not in ("/usr", "/opt"):
                args += ["--ro-bind", p, p]
        if self.gpu:
            for node in gpu_devices():
                args += ["--dev-bind", node, node]
            if os.path.isdir("/sys"):
                args += ["--ro-bind", "/sys", "/sys"]  # GPU runtimes read the PCI topology
        args += ["--bind", str(self.workspace), str(self.workspace)]
        for p in self.readonly:  # after the workspace: a read-only path inside it stays read-only
            args += ["--ro-bind", str(p), str(p)]
        return args

    def argv(self, cmd: list[str], cwd: Path | None = None) -> list[str]:
        """The full bwrap command line for `cmd` (exposed for tests and debugging)."""
        # --cap-drop ALL: without it a sandbox started by root keeps CAP_SYS_ADMIN and can remount the read-only
        # binds writable (host /usr, the venv) and get out.
        return [self.bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--hostname", "sandbox",
                "--cap-drop", "ALL",
                *self._mounts(), "--chdir", str(cwd or self.workspace), "--", *cmd]

    def run(self, cmd: str | list[str], *, cwd: Path | None = None, limits: Limits | None = None,
            env: dict[str, str] | None = None) -> CommandResult:
        """Run `cmd` (a shell string, or an argv list) inside the sandbox."""
        argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        full_env = self._env(env)
        # bwrap itself starts with the clean environment, so nothing of the host's leaks in.
        return run_limited(self.argv(argv, cwd), env=full_env, cwd=self.workspace, limits=limits or self.limits,
                           gpu=self.gpu, bwrap=True)


    def popen(self, argv: list[str], *, limits: Limits | None = None,
              env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start a long-lived process in the sandbox with stdin/stdout pipes (text, line-buffered), in its own
        process group; stderr goes to stdout. The caller kills the group (`kill_group`)."""
        full_env = self._env(env)
        return _popen(self.argv(argv), full_env, self.workspace, limits or self.limits, self.gpu, bwrap=True)


@dataclass
class UnsandboxedRunner(_Backend):
    """No isolation: commands run on the host with a clean environment and limits. Opt-in only; warns."""


    def __post_init__(self):
        super().__post_init__()
        warnings.warn("kernelgym: sandboxing is OFF (sandbox='none'): agent commands run unisolated, with network "
                      "access and your files reachable. Use only with trusted policies.", stacklevel=3)

    def _env(self, extra: dict[str, str] | None) -> dict[str, str]:
        # No private /tmp here: keep the Triton cache in the workspace.
        return {**super()._env(extra), "TRITON_CACHE_DIR": str(self.workspace / ".triton-cache")}

    def run(self, cmd: str | list[str], *, cwd: Path | None = None, limits: Limits | None = None,
            env: dict[str, str] | None = None) -> CommandResult:
        """Run `cmd` (a shell string, or an argv list) in the workspace."""
        argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        full_env = self._env(env)
        return run_limited(argv, env=full_env, cwd=cwd or self.workspace, limits=limits or self.limits, gpu=self.gpu)

    def popen(self, argv: list[str], *, limits: Limits | None = None,
              env: dict[str, str] | None = None) -> subprocess.Popen:
        """As `BubblewrapSandbox.popen`, unisolated."""
        full_env = self._env(env)
        return _popen(argv, full_env, self.workspace, limits or self.limits, self.gpu)


def kill_group(proc: subprocess.Popen) -> None:
    """Kill `proc`, its whole process group and, for a bubblewrap sandbox, the sandbox's pid 1 (`_spawn`: killing
    a pid namespace's init kills every process in the namespace); reap `proc`."""
    init = getattr(proc, "sandbox_init", None)
    if init is not None:
        try:
            signal.pidfd_send_signal(init, signal.SIGKILL)
        except OSError:
            pass  # already gone
        os.close(init)
        proc.sandbox_init = None
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    group = getattr(proc, "sandbox_cgroup", None)
    if group is not None:
        proc.sandbox_cgroup = None
        group.destroy()


def make_sandbox(kind: str, workspace: Path, **kwargs) -> BubblewrapSandbox | UnsandboxedRunner:
    """Build a sandbox backend by name: ``"bwrap"`` (default) or ``"none"`` (explicit opt-out).

    Raises:
        SandboxUnavailableError: bubblewrap was asked for and cannot run here.
        ValueError: unknown `kind`.
    """
    if kind == "bwrap":
        return BubblewrapSandbox(workspace, **kwargs)
    if kind == "none":
        return UnsandboxedRunner(workspace, **kwargs)
    raise ValueError(f"unknown sandbox {kind!r}; expected 'bwrap' or 'none'")
