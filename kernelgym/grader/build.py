"""The compile gate of compiled languages (cuda): the candidate's sources built by the trusted side, before any of its
code runs, into a cache that only this step writes.

The build runs the backend module as a script (``python kernelgym/backends/<language>.py build SRC OUT FILE...``) in
a sandbox of its own: the sources and the backend are read-only, only a fresh output directory is writable, and no
candidate code runs there (a compiler reads the sources; it does not execute them). The result moves into the cache
under a key of the sources' bytes and the backend's toolchain, so unchanged sources are not rebuilt; the harness
then gets the build read-only and only loads it.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from kernelgym.resources import cache_home
from kernelgym.backends import backend_path
from kernelgym.sandbox import PYTHON, Limits, make_sandbox

#: The file a finished build leaves in its directory; a directory without it is not a build.
BUILT_MARKER = "BUILT"
#: Address space per build process: a compiler told to `#include "/dev/zero"` stops here instead of taking the host.
BUILD_MEMORY_BYTES = 8 << 30
#: Files a source may include: part of the cache key.
HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".inl", ".hip")


def cache_root() -> Path:
    """Where builds are cached: ``$KERNELGYM_CACHE_DIR/builds`` (default ``~/.cache/kernelgym/builds``)."""
    return cache_home() / "builds"


@dataclass
class BuildResult:
    """`directory` holds the build where `ok`; `log` is the compiler's output (the compile gate's message);
    `cached` says the build was found in the cache."""

    ok: bool
    directory: Path | None
    log: str
    cached: bool = False


def source_files(backend: ModuleType, source_dir: Path, editable_files: list[str], entry_point: str) -> list[str]:
    """The files the backend builds: the entry point's file and every editable file with one of its suffixes."""
    entry = entry_point.split(":")[0]
    files = [entry] + [f for f in editable_files if f != entry and f.endswith(tuple(backend.SOURCE_SUFFIXES))]
    return [f for f in files if (source_dir / f).is_file()]


def build_key(backend: ModuleType, source_dir: Path, files: list[str], arch: str | None = None) -> str:
    """Cache key: the backend's toolchain id, the target architecture, each file's name and bytes, and every other
    source or header file beside them (headers the sources may include). Nothing else in the directory counts: a
    grading directory also holds the request and the harness's results, which differ per grading."""
    h = hashlib.sha256(backend.toolchain_id().encode() + b"\0arch=" + str(arch).encode())
    suffixes = (*backend.SOURCE_SUFFIXES, *HEADER_SUFFIXES)
    for f in sorted(p for p in source_dir.rglob("*")
                    if p.is_file() and p.suffix in suffixes and "__pycache__" not in p.parts):
        rel = str(f.relative_to(source_dir))
        h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0" + (b"1" if rel in files else b"0"))
    return h.hexdigest()[:32]


def build(backend: ModuleType, source_dir: Path, editable_files: list[str], entry_point: str, *,
          sandbox: str = "bwrap", timeout_s: float = 600.0, root: Path | None = None,
          arch: str | None = None) -> BuildResult:
    """Build the sources in `source_dir` (a grading directory or the pristine baseline) with `backend`, or find the
    build in the cache.

    Args:
        sandbox: ``"bwrap"`` or ``"none"``; the build sandbox never gets the GPU (a compiler needs none).
        timeout_s: wall-clock limit of the build, s. root: the cache (default `cache_root()`).
        arch: the target architecture (``sm_90``, ``gfx942``), passed to the backend; None: the backend's default.

    Returns a `BuildResult`; a failed build is a result (with the compiler log), never an exception.
    """
    root = Path(root or cache_root())
    files = source_files(backend, source_dir, editable_files, entry_point)
    key = build_key(backend, source_dir, files, arch)
    final = root / f"{backend.LANGUAGE}-{key}"
    if (final / BUILT_MARKER).is_file():
        return BuildResult(True, final, f"build cached ({final.name}): sources unchanged", cached=True)
    tmp = root / f"tmp-{key}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    try:
        # No GPU in the build sandbox: a compiler needs none, and without it the memory limit applies (GPU runtimes
        # reserve more address space than any limit); the backend reads the target architecture from `arch`.
        box = make_sandbox(sandbox, tmp, readonly=[backend_path(backend.LANGUAGE), source_dir], gpu=False,
                           env={"KERNELGYM_CUDA_ARCH": arch} if arch else {})
        run = box.run([PYTHON, str(backend_path(backend.LANGUAGE)), "build", str(source_dir), str(tmp), *files],
                      limits=Limits(timeout_s=timeout_s, max_output_bytes=16000, memory_bytes=BUILD_MEMORY_BYTES))
        log = run.output
        if run.timed_out:
            return BuildResult(False, None, f"the build ran past the {timeout_s:.0f} s limit and was killed\n{log}")
        if run.returncode != 0 or not (tmp / BUILT_MARKER).is_file():
            return BuildResult(False, None, log or f"the build failed (exit code {run.returncode})")
        try:
            os.rename(tmp, final)
        except OSError:  # built meanwhile by another grading: that one is as good
            if not (final / BUILT_MARKER).is_file():
                raise
        return BuildResult(True, final, log)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def copy_build(build_dir: Path, dest: Path) -> None:
    """Copy what loading a build needs (its top-level files: the library, the markers; not the object files or the
    copied sources) from the cache into `dest`, a new directory.

    Raises:
        FileExistsError: `dest` exists (something else put it there).
    """
    dest.mkdir()
    for f in build_dir.iterdir():
        if f.is_file() and not f.suffix == ".o" and f.name not in ("build.ninja", ".ninja_log", ".ninja_deps"):
            shutil.copy2(f, dest / f.name)
