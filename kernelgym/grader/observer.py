"""The outside observer: which kernels ran in each checked call, and for how long, as Nsight Compute saw them.

On NVIDIA GPUs the candidate's check runs once more, in a sandboxed process under ``ncu`` (the observed run: harness
mode ``check`` with ``observe``). The harness launches a marker kernel (`protocol.MARKER_KERNEL`) before it imports
the candidate, after a warm-up call of every config, between two checked calls and after the last; the profiler
lists every kernel the process ran, in launch order, with its device time. Here, in the trusted parent:

- `parse_report` reads ncu's CSV; `split` cuts the list at the markers (exactly ``configs + 2`` of them, or the run
  is incomplete: it died, or the candidate launched the marker itself);
- `foreign_kernels` names every kernel after the first marker that is neither one of the candidate's own (the names
  its backend finds in its sources, ``own_kernel_names``) nor on the short allow-list (`ALLOWED_KERNELS`: PyTorch's
  fill and copy kernels, i.e. allocation with zeros and copies): a library or PyTorch kernel in a checked call fails
  that config; one at import, in the warm-up calls or after the last call fails every config;
- `cross_check` compares a measured speedup with the ratio of the observed device times of the baseline's and the
  candidate's checked calls: a speedup above the noise band and more than `margin` above the observed ratio earns
  nothing.

What the observer cannot see: work done on the host (values computed in Python and copied in are a copy, which
is allowed), and work in another process. The profiler's frontend runs inside the sandbox (it cannot reach a process
in bubblewrap's namespaces from outside; seen on the H200, benchmarks/results/README.md), so candidate code that
gets past the static check could signal it or rewrite its log; an incomplete or unreadable report fails the grading.

Source of the metric and flags: Nsight Compute CLI documentation (``gpu__time_duration.sum``, ``--csv``,
``--cache-control all``, ``--clock-control none``, ``--target-processes all``, ``--log-file``).
"""
from __future__ import annotations

import csv
import math
import os
import re
import shutil
from dataclasses import dataclass, field

from kernelgym.grader.protocol import MARKER_KERNEL

METRIC = "gpu__time_duration.sum"
ALLOWED_KERNELS = ("FillFunctor", "direct_copy_kernel_cuda")
"""Substrings of PyTorch kernels any candidate may run: fills (``torch.zeros``, ``fill_``) and copies (``copy_``,
``.contiguous()``). Everything else must be the candidate's own."""
LIBRARY_NAME = re.compile(r"^(sm\d+_|cutlass|nvjet|ampere_|volta_|turing_|hopper_|blackwell_|cublas|cudnn|xmma)",
                          re.IGNORECASE)
"""Names vendor libraries give their kernels: a candidate kernel named so is not counted as its own."""
FLUSH_KERNEL = "reduce_kernel"
"""Name (a substring) of the kernel of the harness's cache flush under the kernel tracer (a ``sum`` of the flush
buffer: PyTorch's reduction kernel)."""
NOISE = 0.02
"""A speedup up to 1 + NOISE is not cross-checked (self-grading noise on the H200: p95 0.76%)."""
_UNITS_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}


class ObserverError(RuntimeError):
    """The profiler's report is missing, unreadable, or incomplete; the message says which. `before_candidate`: the
    observed run died before it said it had prepared (`protocol.PREPARED_MARKER`), so before any candidate code ran
    in it: the machine failed (CUDA out of memory beside other envs), not the kernel."""

    def __init__(self, message: str, before_candidate: bool = False):
        super().__init__(message)
        self.before_candidate = before_candidate


@dataclass(frozen=True)
class Kernel:
    """One kernel launch as the profiler listed it: its (demangled) name and device time in ns."""

    name: str
    duration_ns: float


@dataclass
class Observation:
    """An observed run cut at its markers: the kernels of the import and the warm-up calls, per config those of the
    checked call, and those after the last marker."""

    before: list[Kernel]
    checked: list[list[Kernel]]
    after: list[Kernel] = field(default_factory=list)

    def checked_ms(self, index: int) -> float:
        """Device time of config `index`'s checked call, ms (sum over its kernels, as the profiler ran them: one at a
        time, caches flushed before each)."""
        return sum(k.duration_ns for k in self.checked[index]) / 1e6


def find_ncu() -> str | None:
    """The ``ncu`` executable: on PATH, or in the CUDA toolkit's usual place; None where there is none."""
    found = shutil.which("ncu")
    if found:
        return found
    for path in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"):
        if os.access(path, os.X_OK):
            return path
    return None


def ncu_argv(ncu: str, log_file: str) -> list[str]:
    """The profiler's command line (the profiled command follows it): one metric per kernel, device time, with
    caches flushed before each kernel and clocks left as they are (as the grader's own timing runs), every process
    followed, the CSV report written to `log_file`."""
    return [ncu, "--csv", "--print-units", "base", "--metrics", METRIC, "--cache-control", "all",
            "--clock-control", "none", "--target-processes", "all", "--log-file", log_file]


def parse_report(text: str) -> list[Kernel]:
    """The kernels in ncu's CSV report `text`, in launch order (the report's ID column).

    Raises:
        ObserverError: no CSV header; a row whose duration is not a finite number >= 0 or whose ID is not a number;
            IDs that are not 0, 1, 2, ... once each; rows of more than one process.
    """
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if not lines or not lines[0].startswith('"ID"'):
        raise ObserverError("the profiler wrote no report (no CSV header)")
    kernels, processes = {}, set()
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != METRIC:
            continue
        try:
            unit = _UNITS_NS[(row.get("Metric Unit") or "nsecond").strip()]
            value = float((row.get("Metric Value") or "").replace(",", "")) * unit
            order = int(row.get("ID") or "")
        except (KeyError, ValueError):
            raise ObserverError(f"unreadable report row: {row}") from None
        if not math.isfinite(value) or value < 0 or order in kernels:
            raise ObserverError(f"report row out of place (duration {value}, ID {order} seen before: "
                                f"{order in kernels})")
        processes.add(row.get("Process ID"))
        kernels[order] = Kernel(row.get("Kernel Name") or "?", value)
    if sorted(kernels) != list(range(len(kernels))) or len(processes) > 1:
        raise ObserverError(f"the report's kernels are not one process's launches 0..{len(kernels) - 1} "
                            f"({len(processes)} processes)")
    return [kernels[i] for i in range(len(kernels))]


def split(kernels: list[Kernel], n_configs: int, flushed: bool = False) -> Observation:
    """Cut the observed run's kernels at the marker kernels: before the first, the harness's own preparation (inputs;
    not the candidate's); then the import and the warm-up calls; then each checked call; then the rest. With
    `flushed` (the kernel tracer's runs), the last kernel before every marker but the first is the harness's cache
    flush (`FLUSH_KERNEL`, launched after a synchronize, so nothing of the candidate's follows it): it is dropped.

    Raises:
        ObserverError: not exactly ``n_configs + 2`` markers (the run did not finish, or markers were forged); with
            `flushed`, a part that does not end with the harness's flush.
    """
    marks = [i for i, k in enumerate(kernels) if is_marker(k.name)]
    if len(marks) != n_configs + 2:
        raise ObserverError(f"the observed run launched {len(marks)} marker kernels where {n_configs + 2} were "
                            f"expected: it did not finish, or the candidate launched the marker kernel itself")
    parts = [kernels[a + 1:b] for a, b in zip(marks, marks[1:])]
    if flushed:
        if not all(part and FLUSH_KERNEL in part[-1].name for part in parts):
            raise ObserverError("a part of the observed run does not end with the harness's cache flush")
        parts = [part[:-1] for part in parts]
    return Observation(before=parts[0], checked=parts[1:], after=kernels[marks[-1] + 1:])


def base_name(name: str) -> tuple[str, str]:
    """(namespace, name) of a demangled kernel name: ``void ns::k<float>(float *, int)`` -> (``ns``, ``k``)."""
    name = name.replace("<unnamed>", "unnamed").replace("(anonymous namespace)", "anonymous")
    name = name.removeprefix("void ").strip()
    head = re.split(r"[<(]", name, maxsplit=1)[0].strip()
    namespace, _, base = head.rpartition("::")
    return namespace, base


def is_marker(name: str) -> bool:
    """Whether `name` is the harness's marker kernel: `MARKER_KERNEL` in a namespace (PyTorch's, anonymous:
    ``at::cuda::(anonymous namespace)::spin_kernel(long)`` under the tracer, ``cuda::<unnamed>::spin_kernel(long)``
    in ncu's report). A candidate's own kernel of that name, at file scope, is not one."""
    namespace, base = base_name(name)
    return base == MARKER_KERNEL and bool(namespace)


def is_own(name: str, own: set[str], bare: bool = False) -> bool:
    """Whether the kernel `name` is one of the candidate's `own` kernel names: named in its sources, not named like a
    vendor library's kernel, and declared at file scope (no namespace). With `bare` (Triton, whose kernels carry
    their function's name and nothing else), the whole name must be that identifier: a library's C++ kernel of the
    same name carries its template and parameter list."""
    if bare:
        name = name.strip()
        return name in own and name.isidentifier() and not LIBRARY_NAME.match(name)
    namespace, base = base_name(name)
    return not namespace and base in own and not LIBRARY_NAME.match(base)


def is_allowed(name: str) -> bool:
    """Whether `name` is on the allow-list (`ALLOWED_KERNELS`: PyTorch's fill and copy kernels)."""
    return base_name(name)[0].split("::")[0] in ("native", "at") and any(a in name for a in ALLOWED_KERNELS)


def foreign_kernels(observation: Observation, own: set[str], bare: bool = False) -> list[list[str]]:
    """Per config, the names of kernels that ran with the candidate loaded and are neither its own (`is_own`, with
    `bare`) nor allowed: those of its checked call, plus those of the import, the warm-up calls and after the last
    call (which count against every config). Empty lists: only the candidate's kernels ran."""
    def foreign(kernels: list[Kernel]) -> list[str]:
        return [k.name for k in kernels
                if not is_marker(k.name) and not is_own(k.name, own, bare) and not is_allowed(k.name)]
    everywhere = foreign(observation.before) + foreign(observation.after)
    return [list(dict.fromkeys(everywhere + foreign(c))) for c in observation.checked]


def cross_check(speedup: float, baseline_ms: float, candidate_ms: float, margin: float) -> str | None:
    """None where the measured `speedup` agrees with the profiler; else why it does not.

    A speedup up to `NOISE` above 1 is not checked (nothing is gained there); the run's own per-round band is not
    used, since the candidate's process reports it. Above, the speedup may exceed the observed ratio
    ``baseline_ms / candidate_ms`` (device times of the checked calls, ms) by at most the fraction `margin` (the two
    measurements differ: the profiler runs one kernel at a time, so multi-stream work is serialized).
    """
    if not (math.isfinite(speedup) and math.isfinite(baseline_ms) and math.isfinite(candidate_ms)):
        return f"speedup {speedup} or the profiler's times ({baseline_ms}, {candidate_ms} ms) are not finite"
    if speedup <= 1.0 + NOISE:
        return None
    if candidate_ms <= 0:
        return (f"speedup {speedup:.3f}x measured, but the profiler saw no device time in the candidate's checked "
                f"call")
    observed = baseline_ms / candidate_ms
    if speedup > observed * (1 + margin):
        return (f"speedup {speedup:.3f}x measured, but the profiler saw the baseline's kernels take {baseline_ms:.4f} ms "
                f"and the candidate's {candidate_ms:.4f} ms ({observed:.3f}x): more than {margin:.0%} apart")
    return None
