"""The observer's kernel tracer: a CUPTI activity tracer loaded into the observed process by the CUDA driver (a
grading's own checked run, or a run of its own: observing.py).

Nsight Compute profiles one kernel at a time (about 70-100 ms each on the H200, benchmarks/results/README.md), which
makes an observed run cost seconds. The tracer (`kernel_trace.cpp`, beside this file) records the same list, every
kernel the process ran with its demangled name and device time, through CUPTI's activity API at a few microseconds
per kernel: the CUDA driver loads it at ``cuInit`` from ``CUDA_INJECTION64_PATH``, the mechanism the Nsight tools use.
It is built once per machine with the host C++ compiler against the CUDA toolkit's CUPTI (or the copy Triton ships),
cached under ``$KERNELGYM_CACHE_DIR/tracer``.

Like ncu's injected library, it lives in the observed process; what it writes is read by the trusted parent after
the sandbox is gone, and a file that is missing, has no ``end`` line, dropped records, a kernel of unknown start or
end, or comes from more than one process fails the observation (`parse_trace`). A process that cannot create its
trace exits inside ``cuInit``, before any kernel: no process of the observed run runs CUDA unseen for that reason.

Sources: CUPTI documentation (Activity API; ``CUDA_INJECTION64_PATH`` and ``InitializeInjection``), NVIDIA's
``cupti_trace_injection`` sample.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from kernelgym.resources import cache_home
from kernelgym.grader.observer import Kernel, ObserverError

SOURCE = Path(__file__).with_name("kernel_trace.cpp")
TRACE_PREFIX = "kernel-trace"
"""File name prefix of the traces in the observed run's results directory (``kernel-trace.<pid>``)."""
HEADER = "kernelgym-trace 1 "
_RECORD = re.compile(r"^(\d{1,20})\t(\d{1,20})\t(\d{1,20})\t(.+)$")  # 64-bit numbers: int() stays cheap


def cupti_locations() -> list[tuple[Path, Path]]:
    """(include directory, library directory) pairs where CUPTI may be, most preferred first: the CUDA toolkit
    (``$CUDA_HOME``, /usr/local/cuda; ``extras/CUPTI`` or the toolkit's own include/lib since CUDA 13), then the copy
    Triton's NVIDIA backend ships."""
    homes = [Path(p) for p in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda") if p]
    pairs = []
    for home in homes:
        pairs += [(home / "extras/CUPTI/include", home / "extras/CUPTI/lib64"), (home / "include", home / "lib64"),
                  (home / "include", home / "lib"), (home / "targets/x86_64-linux/include", home / "targets/x86_64-linux/lib")]
    try:
        import triton
        nvidia = Path(triton.__file__).parent / "backends" / "nvidia"
        pairs.append((nvidia / "include", nvidia / "lib" / "cupti"))
    except ImportError:
        pass
    return pairs


def find_cupti() -> tuple[Path, Path] | None:
    """The first (include, lib) pair holding ``cupti_activity.h`` and ``libcupti.so``; None where there is none."""
    for include, lib in cupti_locations():
        if (include / "cupti_activity.h").is_file() and (lib / "libcupti.so").exists():
            return include, lib
    return None


def kernel_record_type(include: Path) -> str:
    """The newest ``CUpti_ActivityKernelN`` record type the header declares (its fields ``start``, ``end``,
    ``correlationId`` and ``name`` are the same in every version the tracer uses)."""
    versions = re.findall(r"\}\s*CUpti_ActivityKernel(\d+)\s*;", (include / "cupti_activity.h").read_text(errors="replace"))
    if not versions:
        raise ObserverError(f"no CUpti_ActivityKernelN record type in {include / 'cupti_activity.h'}")
    return f"CUpti_ActivityKernel{max(map(int, versions))}"


def cache_dir() -> Path:
    """``$KERNELGYM_CACHE_DIR/tracer`` (default ``~/.cache/kernelgym/tracer``)."""
    return cache_home() / "tracer"


def unavailable() -> str | None:
    """Why the tracer cannot be built here (None: it can): no C++ compiler or no CUPTI."""
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        return f"no C++ compiler ({os.environ.get('CXX', 'g++')}) to build the kernel tracer"
    if find_cupti() is None:
        return "CUPTI (cupti_activity.h, libcupti.so) not found in the CUDA toolkit or Triton"
    return None


def build(timeout_s: float = 120.0) -> Path:
    """The tracer's shared library, built on first use and cached by the hash of its source, the compiler and the
    CUPTI location (about 0.5 s to build).

    Raises:
        ObserverError: no compiler or CUPTI, or the build failed (its log in the message).
    """
    why = unavailable()
    if why:
        raise ObserverError(why)
    include, lib = find_cupti()
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    record = kernel_record_type(include)
    key = hashlib.sha256("\0".join([SOURCE.read_text(), cxx, str(include), str(lib), record,
                                    str((lib / "libcupti.so").resolve())]).encode()).hexdigest()[:16]
    out = cache_dir() / key / "libkernelgym_trace.so"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(f".{os.getpid()}.tmp")
    argv = [cxx, "-shared", "-fPIC", "-O2", "-std=c++17", f"-DKG_KERNEL_RECORD={record}", f"-I{include}",
            "-o", str(partial), str(SOURCE), f"-L{lib}", "-lcupti", f"-Wl,-rpath,{lib}"]
    try:
        run = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ObserverError(f"building the kernel tracer passed {timeout_s:.0f} s") from None
    if run.returncode != 0:
        raise ObserverError(f"building the kernel tracer failed:\n{(run.stdout + run.stderr)[-2000:]}")
    os.replace(partial, out)  # atomic: a concurrent grader sees the whole library or none
    return out


def env(library: Path, results: Path, deferred: bool = False) -> dict[str, str]:
    """A traced process's environment additions: the driver loads `library`, which writes to `results`. `deferred`:
    it records nothing until the harness starts it at its first marker (``kernelgym_trace_enable``), and nothing after
    its flush: a grading's own checked run, whose baseline and timed runs are not traced (observing.py)."""
    return {"CUDA_INJECTION64_PATH": str(library), "KERNELGYM_TRACE_FILE": str(results / TRACE_PREFIX),
            "KERNELGYM_TRACE_DEFERRED": "1" if deferred else "0"}


def remove_traces(directory: Path) -> None:
    """Remove the traces in `directory` (a grading directory where no candidate code has run yet: a prepared process
    that died before it ran any left its trace, and a fresh process, tracing itself, must be the only one there)."""
    for path in directory.glob(TRACE_PREFIX + ".*"):
        path.unlink(missing_ok=True)


def parse_trace(results: Path, read) -> list[Kernel]:
    """The kernels in the trace the observed run left in `results`, in the order they ran (device start time).
    `read(path)` reads a file the candidate could have written (size-capped, no links followed).

    Raises:
        ObserverError: no trace, or traces of more than one process; a trace without its ``end`` line (the run
            died or the flush never ran), with dropped records, a malformed line, or a kernel whose start or end
            time is unknown (CUPTI writes 0 where it could not time a kernel).
    """
    files = sorted(p for p in results.iterdir() if p.name.startswith(TRACE_PREFIX + "."))
    if not files:
        raise ObserverError("the kernel tracer wrote no trace (it was not loaded, or CUPTI failed)")
    if len(files) > 1:
        raise ObserverError(f"kernels ran in {len(files)} processes: the check must run in the harness's own process")
    # Split at "\n" alone, as the tracer writes (it replaces "\n" and "\t" in names): splitlines() would also split
    # at "\r", "\x1c", "\x85", "\u2028" and others a name may hold.
    lines = read(files[0]).decode(errors="replace").removesuffix("\n").split("\n")
    if not lines or not lines[0].startswith(HEADER):
        raise ObserverError("the kernel trace has no header")
    if len(lines) < 2 or not lines[-1].startswith("end "):
        error = next((line for line in lines if line.startswith("error:")), None)
        raise ObserverError(error or "the kernel trace is incomplete (no end line: the run died before its flush)")
    try:
        records, dropped = (int(x) for x in lines[-1].split()[1:3])
    except ValueError:
        raise ObserverError(f"unreadable end line: {lines[-1][:200]}") from None
    if dropped:
        raise ObserverError(f"the kernel tracer dropped {dropped} records")
    kernels = []
    for line in lines[1:-1]:
        match = _RECORD.match(line)
        if not match:
            raise ObserverError(f"unreadable trace line: {line[:200]}")
        start, end = int(match[1]), int(match[2])
        if not start or not end:  # CUPTI_TIMESTAMP_UNKNOWN: sorted by start, such a kernel would leave its call
            raise ObserverError(f"a kernel's start or end time is unknown (0): {line[:200]}")
        if end < start:
            raise ObserverError(f"a kernel ends before it starts: {line[:200]}")
        kernels.append((start, int(match[3]), Kernel(match[4], float(end - start))))
    if len(kernels) != records:
        raise ObserverError(f"the trace lists {len(kernels)} kernels where its end line says {records}")
    return [k for _, _, k in sorted(kernels, key=lambda t: (t[0], t[1]))]
