"""One timing schedule per GPU, shared by every grading on the host: env processes, vector-env workers and Ray
actors alike (`GraderConfig.gpu_schedule`).

The schedule is an exclusive ``flock`` on one file per GPU, under the grading cache (``<cache>/gpu-locks/``, where
every process of the user on this host finds it). With `GraderConfig.gpu_quiet_turns`, other gradings' trusted GPU
work (the harness's preparation, the env processes' references and comparisons) holds its shared side, and a gate
file beside it lets a waiting turn go first (`protocol.take_turn`). The harness holds it only while it times a candidate against
the baseline, and in an observed run while the checked calls run under the profiler (harness.gpu_turn); what other
gradings do meanwhile (preparing inputs, compiling, computing references, comparing) overlaps. The workspace's
bench.py takes the same turns for its timed runs (bench.json names the file). The file is bound read-only into the
candidate's sandbox and the agent's (flock needs no write access).

What a candidate can do to it, and what bounds it: the lock is taken in the candidate's own process, so a candidate
can hold it past its turn (a duplicated descriptor, a child) until its process ends (the grading's time limit, then
every process in its sandbox is killed); every other grading waits at most `GraderConfig.gpu_wait_s` for its turn
and then times anyway, and its grade says so (``gpu_turn`` in the performance stage). A candidate that skips the
lock only overlaps its own timed runs with others', as without a schedule. An agent's shell command can hold it
too, for as long as the command runs; the same bound applies to every grading it delays.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from kernelgym.grader.cache import GRADING_CACHE
from kernelgym.grader.protocol import gate_path, take_turn

#: Where the lock files live, under the grading cache's root.
LOCK_DIR = "gpu-locks"


def gpu_key() -> str:
    """A name for the GPU this process grades on, the same in every process on the host that uses it: its UUID as
    NVML reports it (`_nvml_uuid`: no CUDA context is made, and a process forked after CUDA started gets it too), or
    as CUDA reports it where this process has CUDA started already; else the first device CUDA_VISIBLE_DEVICES names
    (an index or a UUID), else ``0``.

    Never starts CUDA: an env's trusted process that named its lock through CUDA held a context (about 0.5 GiB of the
    GPU) for nothing, and a process that cannot start CUDA (forked after its parent did) named the same GPU by its
    index, so the two took different locks and their turns overlapped."""
    uuid = _nvml_uuid()
    if uuid is not None:
        return uuid
    import torch

    if torch.cuda.is_initialized():
        uuid = getattr(torch.cuda.get_device_properties(0), "uuid", None)
        if uuid is not None:
            return f"GPU-{uuid}"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return visible or "0"


def _nvml_uuid() -> str | None:
    """The UUID (``GPU-...``) of CUDA's device 0 from NVML, CUDA_VISIBLE_DEVICES taken into account (torch's own
    mapping, which `torch.cuda.device_memory_used` uses); None where NVML or the mapping is not there (no NVIDIA
    driver, a MIG instance, another torch)."""
    import warnings

    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            uuids = torch.cuda._raw_device_uuid_nvml()
            if not uuids:
                return None
            uuid = uuids[torch.cuda._get_nvml_device_index(0)]
    except Exception:  # noqa: BLE001 - any failure: the next way of naming the GPU
        return None
    return uuid if isinstance(uuid, str) and uuid.startswith("GPU-") else None


def lock_file(key: str | None = None, root: Path | None = None) -> Path:
    """The lock file of GPU `key` (default `gpu_key()`), created where missing, mode 0644 whatever the umask (readable
    to the sandbox's user, so no sandbox hands it over), as an absolute path with no links: the sandbox binds the
    resolved path, and the harness opens the path its request names, so a link above it (``~/.cache`` linked to
    scratch space, a relative ``KERNELGYM_CACHE_DIR``) would leave the harness nothing to open and every turn
    unscheduled.

    Raises:
        OSError: the cache directory cannot be written, or the lock's name is taken by something not a regular
            file (a link, a FIFO: the harness then could be bound to another file, or block opening it)."""
    key = gpu_key() if key is None else key
    directory = ((root if root is not None else GRADING_CACHE.root) / LOCK_DIR).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (re.sub(r"[^A-Za-z0-9._-]", "_", key) + ".lock")
    _regular_file(Path(gate_path(str(path))))  # the gate a waiting turn holds (protocol.take_turn)
    _regular_file(path)
    return path


def _regular_file(path: Path) -> None:
    """Create `path` where missing, mode 0644 whatever the umask (`lock_file`).

    Raises:
        OSError: it cannot be created, or its name is taken by something not a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: the GPU's lock is not a regular file")
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != 0o644:
            os.fchmod(fd, 0o644)
    finally:
        os.close(fd)


def turn_files(lock: Path | None) -> list[Path]:
    """The files a sandbox binds read-only for the schedule of `lock` (`lock_file`): the lock and its gate
    (`protocol.gate_path`, where it exists: a sandbox cannot bind a missing path); none without a lock."""
    if lock is None:
        return []
    gate = Path(gate_path(str(lock)))
    try:
        regular = stat.S_ISREG(os.lstat(gate).st_mode)  # not a link: the sandbox would bind its target
    except OSError:
        regular = False
    return [lock, gate] if regular else [lock]


def request_fields(lock: Path | None, config) -> dict:
    """The harness request's schedule fields for `lock` (None: no schedule) under `config` (a `GraderConfig`)."""
    return {"gpu_lock": str(lock) if lock else None, "gpu_wait_s": config.gpu_wait_s,
            "gpu_quiet_turns": bool(lock) and config.gpu_quiet_turns}


def shared_turn(lock: Path | None, config):
    """A context manager holding the schedule's shared side for trusted work on the GPU in this process (the
    references and comparisons) where `config.gpu_quiet_turns` asks for quiet turns (`protocol.take_turn`); else,
    or without a lock, it takes nothing."""
    quiet = lock is not None and config.gpu_quiet_turns
    return take_turn(str(lock) if quiet else None, config.gpu_wait_s, shared=True)


def scheduled_lock(config, hardware) -> Path | None:
    """The lock file gradings with `config` (a `GraderConfig`) on `hardware` take turns on, or None: where
    `config.gpu_schedule` is off, on the CPU interpreter (nothing is timed), or where no lock file can be made (a
    warning says so; grading then goes on unscheduled). The workspace's bench.py takes the same turns for its timed
    runs, bound read-only into the agent's sandbox as into the candidate's."""
    if not config.gpu_schedule or hardware.interpreter:
        return None
    try:
        return lock_file()
    except OSError as e:
        import warnings
        warnings.warn(f"GraderConfig.gpu_schedule: no lock file could be made ({e}); grading without the GPU's "
                      f"schedule", RuntimeWarning, stacklevel=2)
        return None
