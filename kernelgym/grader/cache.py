"""`GradingCache`: the work of grading that does not depend on the candidate, done once per host and reused.

What it holds, per `baseline_key` (the task's files, the hardware, the configs, the sandbox, the observer tool and the
software versions: everything the entry depends on):

- the pristine baseline's observation (its kernels and device times per config under the outside observer), which
  the speedup cross-check compares every candidate's observed times with;
- the baseline's kernel cache (a backend's compiled kernels and host launchers, as a prepared grading compiled them
  from the pristine task before any candidate code ran there), seeded into every later grading directory so the
  baseline, and a candidate that shares its kernels, are not compiled again;
- the host launchers the baseline's observed run built, given to every candidate's observed run.

In memory per process and on disk per host, under ``$KERNELGYM_CACHE_DIR/grading`` (default
``~/.cache/kernelgym/grading``): a new process (a new env of an RL run, one of N parallel envs) finds the baseline
observed and compiled already. Only trusted code writes an entry (the baseline's own runs, and a prepared grading's
kernel cache before its candidate started), every entry is written to a temporary name and renamed into place, and
each is made under an exclusive file lock (``fcntl.flock``): N processes starting at once observe each baseline once,
and one profiler runs at a time. An observation older than `MAX_AGE_S` is made again (clocks and driver state drift;
it serves the cross-check, whose margin is wide, never the speedup, which is timed against the baseline in every
grading). Where the folder cannot be written, the cache keeps entries in memory only.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import platform
import threading
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Iterator

from kernelgym.grader.files import copy_regular_files, remove_tree
from kernelgym.grader.observer import Kernel, Observation
from kernelgym.resources import cache_home

#: How long an on-disk baseline observation is trusted, s.
MAX_AGE_S = 24 * 3600.0
#: The most of a backend's kernel cache kept or seeded per entry.
MAX_CACHE_BYTES = 256 << 20


def software_versions() -> dict[str, str]:
    """The versions a baseline's compiled kernels and device times depend on: Python, kernelgym, torch, triton, and
    the NVIDIA driver where one is loaded."""
    versions = {"python": platform.python_version()}
    for dist in ("kernelgym", "torch", "triton"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "absent"
    try:
        versions["driver"] = Path("/proc/driver/nvidia/version").read_text().splitlines()[0]
    except (OSError, IndexError):
        versions["driver"] = "none"
    return versions


def tree_digest(root: Path) -> str:
    """SHA-256 over the relative paths and bytes of the regular files under `root` (``__pycache__`` left out)."""
    h = hashlib.sha256()
    for path in sorted(p for p in Path(root).rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def baseline_key(task_root: Path, hardware_id: str, configs: list[dict], sandbox: str, observer_tool: str) -> str:
    """The key of a baseline's entries: a digest of everything they depend on (see the module docstring)."""
    parts = {"task": str(task_root), "files": tree_digest(task_root), "hardware": hardware_id, "configs": configs,
             "sandbox": sandbox, "observer_tool": observer_tool, "software": software_versions()}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def task_config_key(task_root: Path, config: dict) -> str:
    """The key of work that depends on a task's files and one config only (`GradingCache.first_time`)."""
    return hashlib.sha256(json.dumps({"files": tree_digest(task_root), "config": config}, sort_keys=True,
                                     default=str).encode()).hexdigest()[:32]


def _observation_from_json(data: dict) -> Observation:
    def kernels(rows: list) -> list[Kernel]:
        return [Kernel(str(k["name"]), float(k["duration_ns"])) for k in rows]
    return Observation(kernels(data["before"]), [kernels(c) for c in data["checked"]], kernels(data.get("after", [])))


class GradingCache:
    """The per-host cache of a baseline's observation, kernel cache and launchers (see the module docstring).

    Args:
        root: the on-disk folder (default ``$KERNELGYM_CACHE_DIR/grading``, resolved at each use).
    """

    def __init__(self, root: Path | None = None):
        self._root = root
        self._observations: dict[str, tuple[float, Observation]] = {}
        self._lock = threading.Lock()  # one profiler at a time in this process (the file lock: across processes)
        self._seen: set[str] = set()
        self._loaded: dict[str, object] = {}
        self._memo_lock = threading.Lock()  # not `_lock`, which a baseline's observation holds for seconds

    @property
    def root(self) -> Path:
        return self._root if self._root is not None else cache_home() / "grading"

    def _entry(self, key: str) -> Path:
        return self.root / key

    @contextlib.contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        """This process's lock, then the host's file lock of `key` where the folder can be written."""
        with self._lock:
            try:
                self.root.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.root / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            except OSError:
                yield
                return
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # closing releases the lock

    # -- the baseline's observation ------------------------------------------------------------------------------
    def loaded(self, key: str, load: Callable[[], object]) -> object:
        """What `load()` returns, loaded once per process under `key` (a task's reference and input builder,
        imported from the task directory)."""
        with self._memo_lock:
            if key not in self._loaded:
                self._loaded[key] = load()
            return self._loaded[key]

    def first_time(self, key: str) -> bool:
        """True the first time `key` is asked for in this process, False after (thread-safe): for work on the task
        alone, such as the trivial-output check of its tolerances, done once per process, not per grading."""
        with self._memo_lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            return True

    def observation(self, key: str, make: Callable[[], Observation]) -> Observation:
        """The baseline's observation for `key`: from memory, else from disk (younger than `MAX_AGE_S`), else made by
        `make()` (under the lock, so once per host) and kept.

        Raises:
            whatever `make` raises (ObserverError); nothing is kept then.
        """
        now = time.time()
        held = self._observations.get(key)
        if held is not None and now - held[0] < MAX_AGE_S:
            return held[1]
        with self._locked(key):
            path = self._entry(key) / "observation.json"
            try:
                data = json.loads(path.read_text())
                if now - float(data["made_at"]) < MAX_AGE_S:
                    obs = _observation_from_json(data["observation"])
                    self._observations[key] = (float(data["made_at"]), obs)
                    return obs
            except (OSError, ValueError, KeyError, TypeError):
                pass  # absent, stale or unreadable: made again
            obs = make()
            self._observations[key] = (now, obs)
            self._write_json(path, {"made_at": now, "observation": asdict(obs)})
            return obs

    def observed(self, key: str) -> bool:
        """Whether this process holds the observation of `key` (made or read)."""
        return key in self._observations

    # -- kernel caches -------------------------------------------------------------------------------------------
    def kernels(self, key: str, kind: str = "kernels") -> Path | None:
        """The kept kernel cache (`kind` ``kernels``: a prepared grading's; ``launchers``: the baseline's observed
        run's) for `key`, or None. A copy counts once its ``<kind>.done`` marker is written."""
        folder = self._entry(key) / kind
        return folder if (self._entry(key) / f"{kind}.done").is_file() and folder.is_dir() else None

    def keep_kernels(self, key: str, src: Path, kind: str = "kernels", suffixes: tuple[str, ...] | None = None) -> bool:
        """Keep a copy of the kernel cache `src` (regular files only, at most `MAX_CACHE_BYTES`, names ending in
        `suffixes` where given) as `kind` for `key`, unless one is kept already. Returns whether one is kept now.

        Copied in place (Triton's group files hold absolute paths, rewritten for the folder they are copied to)
        under a file lock of its own (``<key>.<kind>.lock``: the observation's lock may be held by this very
        process, which keeps the launchers while it observes); a copy cut short has no marker and is made again."""
        if self.kernels(key, kind) is not None:
            return True
        dest = self._entry(key) / kind
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root / f"{key}.{kind}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if self.kernels(key, kind) is not None:
                return True
            remove_tree(dest)
            if not copy_regular_files(src, dest, MAX_CACHE_BYTES, suffixes):
                remove_tree(dest)
                return False
            (self._entry(key) / f"{kind}.done").write_text("")
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    def seed_kernels(self, key: str, dest: Path, kind: str = "kernels", suffixes: tuple[str, ...] | None = None) -> int:
        """Copy the kept `kind` kernel cache of `key` into `dest` (Triton's group files rewritten to point there, as
        `copy_regular_files` does). Returns the bytes copied (0: none kept)."""
        folder = self.kernels(key, kind)
        return copy_regular_files(folder, dest, MAX_CACHE_BYTES, suffixes) if folder is not None else 0

    # -- helpers -------------------------------------------------------------------------------------------------
    def _write_json(self, path: Path, data: dict) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}-{uuid.uuid4().hex[:8]}")
            tmp.write_text(json.dumps(data))
            os.replace(tmp, path)
        except OSError:
            pass  # memory only: the folder cannot be written


#: The process's one cache (its folder resolved from ``$KERNELGYM_CACHE_DIR`` at each use).
GRADING_CACHE = GradingCache()
