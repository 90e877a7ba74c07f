"""One timing schedule per GPU, shared by every grading on the host: env processes, vector-env workers and Ray
actors alike (`GraderConfig.gpu_schedule`).

The schedule is an exclusive ``flock`` on one file per GPU, under the grading cache (``<cache>/gpu-locks/``, where
every process of the user on this host finds it). The harness holds it only while it times a candidate against
the baseline, and in an observed run while the checked calls run under the profiler (harness.gpu_turn); what other
gradings do meanwhile (preparing inputs, compiling, computing references, comparing) overlaps. The file is bound
read-only into the candidate's sandbox (flock needs no write access).

What a candidate can do to it, and what bounds it: the lock is taken in the candidate's own process, so a candidate
can hold it past its turn (a duplicated descriptor, a child) until its process ends (the grading's time limit, then
every process in its sandbox is killed); every other grading waits at most `GraderConfig.gpu_wait_s` for its turn
and then times anyway, and its grade says so (``gpu_turn`` in the performance stage). A candidate that skips the
lock only overlaps its own timed runs with others', as without a schedule.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from kernelgym.grader.cache import GRADING_CACHE

#: Where the lock files live, under the grading cache's root.
LOCK_DIR = "gpu-locks"


def gpu_key() -> str:
    """A name for the GPU this process grades on, the same in every process on the host that uses it: its UUID
    where this process can ask CUDA (reference.cuda_usable), else the first device CUDA_VISIBLE_DEVICES names
    (an index or a UUID), else ``0``."""
    from kernelgym.grader.reference import cuda_usable

    if cuda_usable():
        import torch

        uuid = getattr(torch.cuda.get_device_properties(0), "uuid", None)
        if uuid is not None:
            return f"GPU-{uuid}"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return visible or "0"


def lock_file(key: str | None = None, root: Path | None = None) -> Path:
    """The lock file of GPU `key` (default `gpu_key()`), created where missing (mode 0644: readable to bind).

    Raises:
        OSError: the cache directory cannot be written."""
    key = gpu_key() if key is None else key
    directory = (root if root is not None else GRADING_CACHE.root) / LOCK_DIR
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (re.sub(r"[^A-Za-z0-9._-]", "_", key) + ".lock")
    if not path.exists():
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
        os.close(fd)
    return path
