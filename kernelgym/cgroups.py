"""A control group per sandboxed command: a limit on the processes and the memory of everything it starts.

RLIMIT_NPROC counts a user's processes machine-wide and RLIMIT_AS one process's address space: neither bounds a
command that forks many processes (thousands in one shell step). A cgroup counts the whole tree, and its
children cannot leave it. The parent makes the group before the command starts (`SandboxCgroup.create`) and moves the
sandbox's pid 1 into it while bwrap holds it before the command (`add`; without bwrap the child joins between fork and
exec, `join`), so the command's first instruction already counts; `destroy` kills what is left and removes the
group.

Where this process may make cgroups: cgroup v2 (a unified hierarchy whose parent group delegates the ``pids`` and
``memory`` controllers), else cgroup v1's ``pids`` and ``memory`` hierarchies, each mounted writable. Elsewhere (an
unprivileged user, a read-only /sys/fs/cgroup) `create` returns None and `unavailable_reason` says why: the commands
run without these limits, as before. Source: the kernel's cgroup-v1 pids/memory and cgroup-v2 documentation.
"""
from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller (``pids``, ``memory``) and ``""`` for v2 (/proc/self/cgroup)."""
    paths = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                paths[c] = path
    except (OSError, ValueError):
        pass
    return paths


def _parents() -> tuple[dict[str, Path] | None, str]:
    """Where to make the groups: {controller: parent directory}, or None and why not."""
    own = _own_paths()
    v2 = ROOT / "cgroup.controllers"
    if v2.is_file() and "" in own:
        parent = ROOT / own[""].lstrip("/")
        try:
            delegated = (parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            delegated = []
        if {"pids", "memory"} <= set(delegated) and os.access(parent, os.W_OK):
            return {"v2": parent}, ""
        return None, f"cgroup v2 at {parent} does not delegate pids and memory to this process"
    parents = {}
    for controller in ("pids", "memory"):
        mount = ROOT / controller
        if not (mount / "cgroup.procs").is_file():
            return None, f"no cgroup v1 {controller} hierarchy at {mount}"
        parent = mount / own.get(controller, "/").lstrip("/")
        if not os.access(parent, os.W_OK):
            return None, f"cannot make cgroups under {parent} (not root, or mounted read-only)"
        parents[controller] = parent
    return parents, ""


_PARENTS: tuple[dict[str, Path] | None, str] | None = None


def unavailable_reason() -> str | None:
    """Why commands run without cgroup limits here, or None where they get them."""
    global _PARENTS
    if _PARENTS is None:
        _PARENTS = _parents()
    return None if _PARENTS[0] else _PARENTS[1]


class SandboxCgroup:
    """One command's group(s): ``pids.max`` and the memory limit written, no process yet.

    Attributes:
        dirs: the group directories (one on v2; the pids and the memory one on v1).
        pids_max: the process limit; memory_bytes: the memory limit (bytes) or None.
    """

    def __init__(self, dirs: dict[str, Path], pids_max: int, memory_bytes: int | None):
        self.dirs, self.pids_max, self.memory_bytes = dirs, pids_max, memory_bytes

    @classmethod
    def create(cls, pids_max: int, memory_bytes: int | None = None) -> "SandboxCgroup | None":
        """A new group limiting its members to `pids_max` processes (and threads) and `memory_bytes` of memory (None:
        no memory limit); None where cgroups cannot be made here (`unavailable_reason`)."""
        if unavailable_reason() is not None:
            return None
        name = f"kernelgym-{uuid.uuid4().hex[:12]}"
        dirs = {c: parent / name for c, parent in _PARENTS[0].items()}
        try:
            for d in dirs.values():
                d.mkdir()
            pids = dirs.get("v2") or dirs["pids"]
            (pids / "pids.max").write_text(str(pids_max))
            if memory_bytes is not None:
                if "v2" in dirs:
                    (dirs["v2"] / "memory.max").write_text(str(memory_bytes))
                    (dirs["v2"] / "memory.swap.max").write_text("0")
                else:
                    (dirs["memory"] / "memory.limit_in_bytes").write_text(str(memory_bytes))
        except OSError:
            cls(dirs, pids_max, memory_bytes).destroy()
            return None
        return cls(dirs, pids_max, memory_bytes)

    def join(self) -> None:
        """Move the calling process into the group (in the child, between fork and exec)."""
        self.add(os.getpid())

    def add(self, pid: int) -> None:
        """Move process `pid` into the group (a sandbox's pid 1 before it starts the command: `sandbox._spawn`).
        Raises OSError where it cannot be moved."""
        for d in self.dirs.values():
            (d / "cgroup.procs").write_text(str(pid))

    def hit_limits(self) -> list[str]:
        """What the group's members ran into, as lines for the command's output: the process limit refused a fork,
        or the memory limit was reached."""
        notes = []
        pids = self.dirs.get("v2") or self.dirs.get("pids")
        try:
            events = dict(line.split() for line in (pids / "pids.events").read_text().splitlines())
            if int(events.get("max", 0)):
                notes.append(f"the sandbox hit its limit of {self.pids_max} processes: forks were refused")
        except (OSError, ValueError):
            pass
        try:
            if "v2" in self.dirs:
                events = dict(line.split() for line in (self.dirs["v2"] / "memory.events").read_text().splitlines())
                hit = int(events.get("max", 0)) or int(events.get("oom_kill", 0))
            else:
                hit = int((self.dirs["memory"] / "memory.failcnt").read_text())
            if hit and self.memory_bytes:
                notes.append(f"the sandbox reached its memory limit of {self.memory_bytes / (1 << 30):.1f} GiB")
        except (OSError, ValueError, KeyError):
            pass
        return notes

    def destroy(self, timeout_s: float = 5.0) -> None:
        """Kill every process still in the group and remove it. A group is removable only once its members are gone,
        which takes a few ms after the kill: what is not removable at once is removed by a background thread (the
        caller's step does not wait for it)."""
        if not self._sweep():
            threading.Thread(target=self._sweep, args=(timeout_s,), daemon=True).start()

    def _sweep(self, timeout_s: float = 0.0) -> bool:
        """Kill the members and remove the groups, retrying for `timeout_s`; whether all are removed."""
        deadline = time.monotonic() + timeout_s
        while True:
            for d in list(self.dirs.values()):
                try:
                    pids = [int(p) for p in (d / "cgroup.procs").read_text().split()]
                except (OSError, ValueError):
                    pids = []
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                try:
                    d.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    continue
            if not any(d.is_dir() for d in self.dirs.values()):
                return True
            if time.monotonic() > deadline:
                return False  # left for a later sweep, or the machine's owner (a process stuck in D state)
            time.sleep(0.01)
