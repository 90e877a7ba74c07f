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

Started by root, every sandbox runs as the unprivileged host user `SANDBOX_UID` (`sandbox_user`): bubblewrap mounts
as root, then `setpriv` drops to that user before the command starts, and the directories the sandbox writes are
handed over to it (`hand_over`).
"""
from __future__ import annotations

import collections
import concurrent.futures
import glob
import json
import os
import resource
import select
import shutil
import signal
import stat
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
#: /proc/keys and /proc/key-users list the keys the sandbox can see, with their descriptions: the host's session
#: keyring, which the sandbox inherits (the seccomp filter refuses reading the keys themselves), names its keys
#: there (a review read a Kerberos-style description). Masked where the kernel has them.
KEYS_MASK = ["--ro-bind-try", "/dev/null", "/proc/keys", "--ro-bind-try", "/dev/null", "/proc/key-users"]

#: The host user and group a sandbox runs as when kernelgym runs as root (``nobody``/``nogroup`` on Debian): never
#: host uid 0, so /etc/shadow is unreadable, /proc/sys is not writable, bwrap's pid 1 (host root) is out of reach,
#: and a setuid file left in a workspace is setuid to this user, not to root. Run by another user, the sandbox
#: runs as that user (already unprivileged).
SANDBOX_UID = SANDBOX_GID = 65534

#: Capabilities a root-started sandbox keeps until `setpriv` drops to `SANDBOX_UID` (which clears them all, the
#: bounding set included) before the command is executed: to change user, to clear the bounding set, and for bwrap
#: to enter the working directory (owned by the sandbox user, maybe owner-only).
DROP_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_DAC_READ_SEARCH")

#: `hand_over` stops descending below this depth and after this many entries: the trusted side writes files near
#: the top of a workspace; whatever lies deeper or further was made by the sandbox user and is its own already.
HAND_OVER_MAX_DEPTH, HAND_OVER_MAX_ENTRIES = 32, 200_000

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
    """The child's preexec function where no bwrap starts the command (`UnsandboxedRunner`): joins `group` and sets
    the rlimits of `_rlimits` (a bwrap sandbox gets both from the parent instead, `_spawn`)."""
    def apply():
        if group is not None:
            group.join()  # before exec: everything the command starts counts
        for which, value in _rlimits(limits, gpu):
            resource.setrlimit(which, (value, value))
    return apply


def _rlimits(limits: Limits, gpu: bool) -> list[tuple[int, int]]:
    """(resource, value) pairs every sandboxed process gets: address space (not with a GPU), file size, CPU time,
    no core dumps."""
    cpu = int(limits.timeout_s * 4) + 10  # several threads may burn CPU in parallel
    out = [(resource.RLIMIT_FSIZE, limits.max_file_bytes), (resource.RLIMIT_CPU, cpu), (resource.RLIMIT_CORE, 0)]
    if limits.memory_bytes and not gpu:
        out.insert(0, (resource.RLIMIT_AS, limits.memory_bytes))
    return out


def _confine(pid: int, limits: Limits, gpu: bool, group: SandboxCgroup | None) -> None:
    """Put the (still blocked) sandbox pid 1 `pid` into `group` and under `_rlimits`: everything the command starts
    is forked from it afterwards and inherits both. Raises OSError where either cannot be set."""
    if group is not None:
        group.add(pid)
    for which, value in _rlimits(limits, gpu):
        hard = resource.prlimit(pid, which)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.prlimit(pid, which, (value, value))


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
        proc = _spawn(argv, bwrap, limits=limits, gpu=gpu, group=group, stdin=subprocess.DEVNULL,
                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=str(cwd), start_new_session=True)
    except BaseException:
        if group is not None:
            group.destroy()
        raise
    half = max(limits.max_output_bytes // 2, 1)
    head = bytearray()
    tail: collections.deque[bytes] = collections.deque()
    counts = {"tail": 0, "total": 0}

    def take(chunk: bytes) -> None:
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

    timed_out = False
    try:
        timed_out = not _read_until_exit(proc, limits.timeout_s, take)
    finally:
        kill_group(proc, wait_init_s=2.0)  # children that outlive the shell must not leak (also on success)
        notes = group.hit_limits() if group is not None else []
        if group is not None:
            group.destroy()
    _read_rest(proc, take, timeout_s=5.0)
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


_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernelgym-spawn")
"""Starts the long-lived processes of threads other than the main one. bwrap's ``--die-with-parent`` kills the
sandbox when the thread that started it exits (the parent-death signal follows the creating thread, prctl(2)): a
background thread that starts a process and returns would kill it at once. This thread lives as long as the process."""


def _read_until_exit(proc: subprocess.Popen, timeout_s: float, take) -> bool:
    """Pass what `proc` prints to `take` (bytes) until it exits (then it is reaped) or `timeout_s` passes; whether it
    exited. One thread waits on the output pipe and a pidfd together: `Popen.wait` with a timeout polls with sleeps
    that double up to 50 ms (which doubled the cost of a short command), and a reader thread costs a wake-up more."""
    out = proc.stdout.fileno()
    try:
        pidfd = os.pidfd_open(proc.pid)
    except OSError:  # already reaped
        proc.wait()
        return True
    try:
        deadline, watch = time.monotonic() + timeout_s, [out, pidfd]
        while True:
            left = deadline - time.monotonic()
            ready = select.select(watch, [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                return False
            if out in ready:
                chunk = os.read(out, 65536)
                if chunk:
                    take(chunk)
                else:
                    watch.remove(out)  # closed: only the exit is left to wait for
            if pidfd in ready:
                proc.wait()
                return True
    finally:
        os.close(pidfd)


def _read_rest(proc: subprocess.Popen, take, timeout_s: float) -> None:
    """After `kill_group`: pass what is left in `proc`'s output pipe to `take`, until it closes or `timeout_s`."""
    out, deadline = proc.stdout.fileno(), time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0 and select.select([out], [], [], left)[0]:
        chunk = os.read(out, 65536)
        if not chunk:
            break
        take(chunk)
    proc.stdout.close()


def _popen(argv: list[str], env: dict[str, str], cwd: Path, limits: Limits, gpu: bool,
           bwrap: bool = False) -> subprocess.Popen:
    """A long-lived process with text pipes, in its own process group and cgroup, under `limits` (`bwrap`: see
    `_spawn`). `kill_group` removes the cgroup. Started from the main thread or from `_SPAWNER`'s, never from a
    thread that may end before the process."""
    if threading.current_thread() is not threading.main_thread():
        return _SPAWNER.submit(_popen_here, argv, env, cwd, limits, gpu, bwrap).result()
    return _popen_here(argv, env, cwd, limits, gpu, bwrap)


def _popen_here(argv: list[str], env: dict[str, str], cwd: Path, limits: Limits, gpu: bool,
                bwrap: bool) -> subprocess.Popen:
    group = _cgroup(limits, gpu)
    try:
        proc = _spawn(argv, bwrap, limits=limits, gpu=gpu, group=group, stdin=subprocess.PIPE,
                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=str(cwd), text=True, bufsize=1,
                      start_new_session=True)
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


def _spawn(argv: list[str], bwrap: bool, *, limits: Limits, gpu: bool, group: SandboxCgroup | None,
           **popen_kwargs) -> subprocess.Popen:
    """`subprocess.Popen(argv, ...)` in `group` under `limits`.

    Without `bwrap`, the child joins the group and sets its rlimits between fork and exec (`_set_limits`). Where
    `argv` starts bubblewrap, no Python runs in the child (a preexec function forces a full fork of this process,
    which cost more than bwrap itself): bwrap is asked for the host pid of the sandbox's pid 1 (``--info-fd``) and
    blocks it before the command (``--block-fd``) while the parent moves it into the group and sets its rlimits
    (`_confine`); the command is forked from it afterwards. The sandbox also gets the seccomp filter of
    `kernelgym.seccomp` (``--seccomp``: no ptrace, no io_uring). A pidfd of pid 1 is kept as ``proc.sandbox_init``
    for `kill_group`: where ptrace is possible (no filter for this machine), code in the sandbox can take pid 1 over
    (same uid, where kernelgym is not root), clear its parent-death signal and make the outer bwrap exit while it
    lives on, out of bwrap's process group.

    Raises:
        OSError: the sandbox could not be put into its group or under its limits (it is killed first).
    """
    if not bwrap:
        return subprocess.Popen(argv, preexec_fn=_set_limits(limits, gpu, group), **popen_kwargs)
    info_r, info_w = os.pipe()
    block_r, block_w = os.pipe()
    try:
        filter_fd = seccomp.program_fd()
        extra, fds = ["--info-fd", str(info_w), "--block-fd", str(block_r)], [info_w, block_r]
        if filter_fd is not None:
            extra += ["--seccomp", str(filter_fd)]
            fds.append(filter_fd)
        try:
            proc = subprocess.Popen([argv[0], *extra, *argv[1:]], pass_fds=fds, **popen_kwargs)
        finally:
            for fd in fds:
                os.close(fd)
        proc.sandbox_init, pid = _init_pidfd(info_r)
        if pid is not None:  # else bwrap failed (its output and exit code say why), or stays blocked until killed
            try:
                _confine(pid, limits, gpu, group)
                os.write(block_w, b"g")
            except OSError as e:
                init = proc.sandbox_init
                # A broken pipe: pid 1, the block's one reader, is exiting; it closes its descriptors before its
                # pidfd reads as exited, so that is waited for a moment.
                wait_s = 1.0 if isinstance(e, BrokenPipeError) else 0
                if init is None or not select.select([init], [], [], wait_s)[0]:
                    kill_group(proc)
                    raise
                # else pid 1 is gone (bwrap failed to set the sandbox up): its output and exit code say why
    finally:  # also where Popen raised (a NUL byte in an argument): no descriptor may leak per command
        os.close(info_r)
        os.close(block_w)
    return proc


def _init_pidfd(info: int, timeout_s: float = 60.0) -> tuple[int | None, int | None]:
    """A pidfd of the process named by bwrap's ``--info-fd`` JSON (``{"child-pid": N}``) read from `info`, and N;
    (None, None) where bwrap exited first (it failed to start the sandbox) or said nothing in `timeout_s`."""
    data, deadline = b"", time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([info], [], [], max(deadline - time.monotonic(), 0))
        chunk = os.read(info, 4096) if ready else b""
        if not chunk:
            return None, None
        data += chunk
        try:
            pid = int(json.loads(data)["child-pid"])
            return os.pidfd_open(pid), pid
        except (ValueError, KeyError, TypeError):
            continue  # not the whole JSON yet
        except OSError:
            return None, None  # already gone: with it, the whole sandbox
    return None, None


def sandbox_user() -> tuple[int, int] | None:
    """The host (uid, gid) sandboxes run as where kernelgym runs as root (`SANDBOX_UID`, `SANDBOX_GID`); None where
    it does not (the sandbox then runs as kernelgym's own user)."""
    return (SANDBOX_UID, SANDBOX_GID) if os.geteuid() == 0 else None


def hand_over(path: Path, uid: int, gid: int, skip: frozenset[str] = frozenset()) -> None:
    """Give `path` and what lies under it to `uid`:`gid` where this process owns it: what the trusted side (run as
    root) wrote into a directory that the sandbox user must read or write.

    Links are never followed (the chown is by directory descriptor with ``AT_SYMLINK_NOFOLLOW``; a directory is
    entered only where it is the one listed), links themselves are left as they are, and a file with several links is
    left alone (no hard link can make the walk give away a file that lies elsewhere). Directories whose path is in
    `skip` are not entered. Stops after `HAND_OVER_MAX_ENTRIES` entries and below `HAND_OVER_MAX_DEPTH`. A missing
    `path` is no error."""
    me = os.geteuid()
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        top = os.open(path, flags)
    except NotADirectoryError:
        try:
            st = os.lstat(path)
            if st.st_uid == me and stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                os.chown(path, uid, gid, follow_symlinks=False)
        except OSError:
            pass
        return
    except OSError:
        return  # missing, or a link
    budget = [HAND_OVER_MAX_ENTRIES]

    def walk(fd: int, where: str, depth: int) -> None:
        st = os.fstat(fd)
        if st.st_uid == me:
            os.fchown(fd, uid, gid)
        if depth >= HAND_OVER_MAX_DEPTH:
            return
        with os.scandir(fd) as entries:
            listed = list(entries)
        for entry in listed:
            budget[0] -= 1
            if budget[0] < 0:
                return
            try:
                est = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(est.st_mode):
                    child_path = os.path.join(where, entry.name)
                    if child_path in skip:
                        continue
                    child = os.open(entry.name, flags, dir_fd=fd)
                    try:
                        now = os.fstat(child)
                        if (now.st_dev, now.st_ino) == (est.st_dev, est.st_ino):  # not swapped meanwhile
                            walk(child, child_path, depth + 1)
                    finally:
                        os.close(child)
                elif est.st_uid == me and stat.S_ISREG(est.st_mode) and est.st_nlink == 1:
                    os.chown(entry.name, uid, gid, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile, or swapped for a link

    try:
        walk(top, os.path.abspath(path), 0)
    except OSError:
        pass  # best effort: what is not handed over stays read-only (or unreadable) for the sandbox user
    finally:
        os.close(top)


class _HandOverFirst:
    """A long-lived sandbox's stdin: before each write, what the trusted side added since to the directories the
    sandbox reads or writes is handed over to the sandbox user (`BubblewrapSandbox._hand_over`): a grading worker
    is told about a grading directory made after it started."""

    def __init__(self, stream, hand_over):
        self._stream, self._hand_over = stream, hand_over

    def write(self, text):
        self._hand_over()
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


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


def _drop_to(uid: int, gid: int, groups: list[int]) -> list[str]:
    """The command prefix that drops a root-started sandbox to `uid`:`gid` (with supplementary `groups`) and clears
    every capability, the bounding set included, before it executes the command: util-linux's ``setpriv`` where it
    is installed (a small binary, started once per command), else this Python (slower to start)."""
    setpriv = shutil.which("setpriv", path="/usr/bin:/bin")
    if setpriv:
        return [setpriv, f"--reuid={uid}", f"--regid={gid}",
                f"--groups={','.join(map(str, groups))}" if groups else "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--"]
    code = ("import os,sys,ctypes;libc=ctypes.CDLL(None,use_errno=True);"
            "[libc.prctl(24,c,0,0,0) for c in range(64)];"  # PR_CAPBSET_DROP, every capability
            f"os.setgroups({groups!r});os.setresgid({gid},{gid},{gid});os.setresuid({uid},{uid},{uid});"
            "os.execvp(sys.argv[1],sys.argv[1:])")
    return [PYTHON, "-S", "-c", code]


def _device_groups(nodes: list[str] | None = None) -> list[int]:
    """The groups through which GPU device nodes that not everyone may open are opened (AMD's /dev/kfd and
    /dev/dri/renderD*: group ``render``): a sandbox that drops to `SANDBOX_UID` keeps these as supplementary groups.
    Group 0 is never given (NVIDIA's /dev/nvidia-caps/nvidia-cap1 is root's, mode 0400: MIG administration, which a
    kernel does not need), nor a group the node's mode gives nothing to."""
    gids = set()
    for node in gpu_devices() + glob.glob("/dev/dri/*") if nodes is None else nodes:
        try:
            st = os.stat(node)
        except OSError:
            continue
        if (not stat.S_ISDIR(st.st_mode) and st.st_mode & 0o006 != 0o006 and st.st_mode & 0o060
                and st.st_gid != 0):
            gids.add(st.st_gid)
    return sorted(gids)


_PROBED: dict[str, str | None] = {}


@dataclass
class BubblewrapSandbox(_Backend):
    """bubblewrap isolation for one workspace.

    Args:
        workspace: the only writable directory, also the working directory and HOME.
        readonly: extra paths bound read-only at the same place (e.g. the grader's harness file).
        gpu: pass the GPU device nodes in.
        env: extra environment variables (e.g. TRITON_INTERPRET=1).
        limits: default limits per command.

    Started by root, the sandbox runs as `SANDBOX_UID` (`sandbox_user`; attribute ``user``): before each command
    (and each write to a long-lived process's stdin) the workspace, and read-only paths only root can read, are handed
    over to that user (`hand_over`). The files the sandbox makes are that user's; root reads them as before.

    Raises:
        SandboxUnavailableError: bubblewrap is not installed or cannot create namespaces here.
    """

    def __post_init__(self):
        super().__post_init__()
        self.bwrap = shutil.which("bwrap")
        if self.bwrap is None:
            raise SandboxUnavailableError(f"bubblewrap (`bwrap`) is not on PATH. {INSTALL_HINT}")
        if self.bwrap not in _PROBED:  # once per process: bwrap and the kernel do not change under it
            probe = subprocess.run([self.bwrap, "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True,
                                   text=True)
            _PROBED[self.bwrap] = probe.stderr.strip() if probe.returncode != 0 else None
        if _PROBED[self.bwrap] is not None:
            raise SandboxUnavailableError(f"bubblewrap cannot create a sandbox here: {_PROBED[self.bwrap]}. "
                                          f"It needs unprivileged user namespaces (sysctl "
                                          f"kernel.unprivileged_userns_clone=1) or root. {INSTALL_HINT}")
        self.user = sandbox_user()
        self._drop = _drop_to(*self.user, _device_groups() if self.gpu else []) if self.user else []

    def _mounts(self) -> list[str]:
        args = []
        binds: list[str] = []  # destinations bound so far: what lies under them exists already

        def bind(how: str, src: str, dest: str) -> None:
            # The directories leading to a bind are made by bwrap, owner-only (root's) unless told otherwise: made
            # here 0755, so that the sandbox user (not root) can reach the workspace and this Python.
            parts = Path(dest).parts
            for i in range(2, len(parts)):
                up = str(Path(*parts[:i]))
                if up not in made and not any(up == b or up.startswith(b + "/") for b in binds):
                    args.extend(["--perms", "0755", "--dir", up])
                    made.add(up)
            args.extend([how, src, dest])
            binds.append(dest)

        made = {"/tmp", "/dev", "/dev/shm", "/proc"}
        for top in ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt"):
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                bind("--ro-bind", top, top)
        # Private, size-capped /tmp and /dev/shm (RAM-backed: RLIMIT_AS does not cover them), writable by every user
        # as on a host (the sandbox user is not the root that mounts them).
        # /proc/sys and /proc/sysrq-trigger read-only: sysctl files check only the uid, not capabilities
        # (kernel.core_pattern runs a program as host root), should a sandbox ever be host uid 0.
        args += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", *PID1_MEMORY_MASK, *KEYS_MASK,
                 "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
                 "--dev", "/dev", "--perms", "1777", "--size", str(self.limits.tmpfs_bytes), "--tmpfs", "/tmp",
                 "--perms", "1777", "--size", str(self.limits.tmpfs_bytes), "--tmpfs", "/dev/shm"]
        # The Python running kernelgym (a venv or a pyenv build may live under a hidden home, or under /tmp:
        # bound after the private /tmp so it is not hidden by it).
        for p in sorted({sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}):
            if not p.startswith(("/usr/", "/etc/", "/opt/")) and p not in ("/usr", "/opt"):
                bind("--ro-bind", p, p)
        if self.gpu:
            for node in gpu_devices():
                args += ["--dev-bind", node, node]
            if os.path.isdir("/sys"):
                args += ["--ro-bind", "/sys", "/sys"]  # GPU runtimes read the PCI topology
        bind("--bind", str(self.workspace), str(self.workspace))
        for p in self.readonly:  # after the workspace: a read-only path inside it stays read-only
            bind("--ro-bind", str(p), str(p))
        return args

    def argv(self, cmd: list[str], cwd: Path | None = None) -> list[str]:
        """The full bwrap command line for `cmd` (exposed for tests and debugging)."""
        # --cap-drop ALL: without it a sandbox started by root keeps CAP_SYS_ADMIN and can remount the read-only
        # binds writable (host /usr, the venv) and get out. Started by root, no user namespace: bwrap mounts as
        # host root (the workspace lies under owner-only run directories) and keeps only what `_drop_to` needs to
        # become `SANDBOX_UID`, which then clears every capability before the command runs. In a user namespace
        # bwrap could only map its own uid, root, to the sandbox's user.
        unshare = (["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
                   if self.user else ["--unshare-all"])
        keep = [a for cap in DROP_CAPS for a in ("--cap-add", cap)] if self.user else []
        return [self.bwrap, *unshare, "--die-with-parent", "--new-session", "--hostname", "sandbox",
                "--cap-drop", "ALL", *keep,
                *self._mounts(), "--chdir", str(cwd or self.workspace), "--", *self._drop, *cmd]

    def _hand_over(self) -> None:
        """Give the workspace, and the read-only paths only their owner may read, to the sandbox user (`hand_over`);
        nothing where the sandbox runs as kernelgym's own user. Read-only paths that everyone may read stay as
        they are, also where they lie inside the workspace."""
        if not self.user:
            return
        readonly = frozenset(str(p) for p in self.readonly)
        hand_over(self.workspace, *self.user, skip=readonly)
        for p in self.readonly:
            try:
                st = os.lstat(p)
            except OSError:
                continue
            private = st.st_mode & (0o005 if stat.S_ISDIR(st.st_mode) else 0o004) == 0
            if st.st_uid == os.geteuid() and private:
                hand_over(p, *self.user, skip=readonly - {str(p)})

    def run(self, cmd: str | list[str], *, cwd: Path | None = None, limits: Limits | None = None,
            env: dict[str, str] | None = None) -> CommandResult:
        """Run `cmd` (a shell string, or an argv list) inside the sandbox."""
        argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        full_env = self._env(env)
        self._hand_over()
        # bwrap itself starts with the clean environment, so nothing of the host's leaks in.
        return run_limited(self.argv(argv, cwd), env=full_env, cwd=self.workspace, limits=limits or self.limits,
                           gpu=self.gpu, bwrap=True)

    def popen(self, argv: list[str], *, limits: Limits | None = None,
              env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start a long-lived process in the sandbox with stdin/stdout pipes (text, line-buffered), in its own
        process group; stderr goes to stdout. The caller kills the group (`kill_group`). Each write to its stdin first
        hands over what was added to the workspace meanwhile (`_HandOverFirst`)."""
        full_env = self._env(env)
        self._hand_over()
        proc = _popen(self.argv(argv), full_env, self.workspace, limits or self.limits, self.gpu, bwrap=True)
        if self.user:
            proc.stdin = _HandOverFirst(proc.stdin, self._hand_over)
        return proc


@dataclass
class UnsandboxedRunner(_Backend):
    """No isolation: commands run on the host with a clean environment and limits. Opt-in only; warns."""


    def __post_init__(self):
        super().__post_init__()
        # Located here, not at the caller: an env makes several runners (env, workspace, grader), and Python's default
        # filter shows a warning once per location, so the user reads it once.
        warnings.warn("kernelgym: sandboxing is OFF (sandbox='none'): agent commands run unisolated, with network "
                      "access and your files reachable. Use only with trusted policies.", stacklevel=1)

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


def kill_group(proc: subprocess.Popen, wait_init_s: float = 0.0) -> None:
    """Kill `proc`, its whole process group and, for a bubblewrap sandbox, the sandbox's pid 1 (`_spawn`: killing
    a pid namespace's init kills every process in the namespace); reap `proc`. Waits up to `wait_init_s` for pid 1
    to have exited (`run_limited`: 2 s): the outer bwrap exits as soon as the command has, before pid 1, and until
    pid 1 is gone its namespace's processes still count in the cgroup, which then is removed by a background thread.
    Long-lived sandboxes are not waited for (a GPU process's teardown takes hundreds of ms)."""
    init = getattr(proc, "sandbox_init", None)
    if init is not None:
        try:
            signal.pidfd_send_signal(init, signal.SIGKILL)
            select.select([init], [], [], wait_init_s)  # readable once it has exited, its namespace emptied
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
