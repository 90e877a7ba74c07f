"""The grading protocol: everything the trusted parent (grader.py) and the candidate's process (harness.py) agree on.

One module, imported by both sides: the parent imports it as ``kernelgym.grader.protocol``; the harness, which runs
inside the sandbox and imports nothing of kernelgym, loads this file by path. Standard library only.

- File names inside a grading directory, and the markers the harness prints.
- The seeds: which inputs are checked, and which verify the timed path.
- `Request`: what the parent asks the harness to do, validated once where the harness reads it.
- `parse_check_result` / `parse_time_result`: the harness's results, validated once where the parent reads them.
  Everything the harness writes passed through candidate-controlled memory: the parsers accept only the expected
  shape and turn anything else into a failure message, never an exception.
- `load_function`: the one ``file.py:function`` loader.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import importlib.util
import math
import os
import stat
import sys
import time
from dataclasses import dataclass, field
from typing import Any

# -- files in a grading directory -------------------------------------------------------------------------------
REQUEST = "request.json"
CHECK_RESULT = "check_result.json"
TIME_RESULT = "time_result.json"
OUTPUTS = "outputs.pt"
HARNESS_LOG = "harness.log"

# -- what the harness prints (the parent reads them from its output) --------------------------------------------
IMPORTED_MARKER = "[harness] candidate imported"
"""Printed once the candidate's module imported (for the log only: the candidate can print it too)."""
IMPORTED_FILE = "imported"
"""Written beside the result once the candidate's module imported: a death before it is a compile failure, after it
a runtime one. A file, not a printed line: the candidate shares the harness's output, but the static check refuses
file writes in its sources (`host_access_refused_in_source`), so its import cannot forge this one."""
PREPARED_MARKER = "[harness] prepared"
"""Printed before any candidate code is read."""
FINISHED = b"finished"
#: Printed by an observed run started ahead once its results and its trace are written: the parent may end its
#: sandbox then, without waiting for CUDA's teardown. Printed early by a candidate, it only cuts its own run short.
OBSERVED_FINISHED_MARKER = "[harness] observed run finished"
"""Written by a worker's child on its ready pipe once its results are written."""

# -- the observed run (observer.py) -------------------------------------------------------------------------------
MARKER_KERNEL = "spin_kernel"
"""Name (a substring of it, as Nsight Compute lists it) of the kernel the harness launches between the parts of an
observed run (``torch.cuda._sleep``, which no task computes with): the parent splits the profiler's list of kernels at
these launches, so no in-process marker the candidate could move decides which kernel belongs to which call."""
OBSERVED_PREFIX = "observed-"
"""Prefix of the observed run's result files (in its own results directory)."""

# -- seeds --------------------------------------------------------------------------------------------------------


def check_seed(seed: int, index: int) -> int:
    """Seed of the inputs on which config `index`'s output is checked for correctness."""
    return seed + index


def verify_seed(seed: int, index: int) -> int:
    """Seed of the inputs on which the timed path's output is verified (never the correctness inputs)."""
    return seed + 1000 + index


def warmup_seed(seed: int, index: int) -> int:
    """Seed of the inputs of an observed run's warm-up call of config `index` (never the checked inputs)."""
    return seed + 2000 + index


def timed_reps(reps: int, rounds: int, call_ms: float | None, budget_ms: float) -> int:
    """Timed runs per kernel on one config: `reps`, or fewer where `reps` calls of the baseline, one of which took
    `call_ms` (ms, timed before any candidate code ran), would take longer than `budget_ms`: then the fewest whole
    rounds' worth that fill `budget_ms`, at least 2 runs a round. A long kernel's run-to-run spread is small, and 100
    runs of it would take most of a large GEMM's grading. `budget_ms` 0, or no `call_ms`: `reps`."""
    if not (0 < budget_ms < math.inf) or call_ms is None or not (0 < call_ms < math.inf) or rounds < 1:
        return reps  # NaN fails both comparisons
    return min(reps, max(2, math.ceil(budget_ms / (call_ms * rounds))) * rounds)


def timed_output_name(index: int) -> str:
    """File (in the grading directory) where the harness saves the timed path's outputs of config `index`."""
    return f"timed_output-{index}.pt"


def output_key(index: int, name: str) -> str:
    """Key of config `index`'s output `name` in a saved outputs file (a flat dict of tensors)."""
    return f"{index}/{name}"


# -- the dynamic check (harness.py `OpRecorder`) ----------------------------------------------------------------
ALLOWED_TORCH_OPS = frozenset({
    # allocation: memory for the candidate's kernels to write (torch.tensor(...) and torch.as_tensor show as lift_fresh)
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros",
    "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "lift_fresh", "lift_fresh_copy", "resize_",
    # views and reshapes (reshape of a non-contiguous tensor: clone then _unsafe_view); set_ rebinds a tensor to a
    # storage, as Triton's interpreter does for every tensor argument of a launch
    "view", "_unsafe_view", "_reshape_alias", "reshape", "as_strided", "expand", "permute", "transpose", "t",
    "unsqueeze", "squeeze", "select", "slice", "narrow", "split", "split_with_sizes", "unbind", "chunk", "alias",
    "detach", "set_",
    # copies (contiguous() is clone; .to(dtype) and .float() are _to_copy) and fills
    "copy_", "clone", "_to_copy", "fill_", "zero_",
})
"""The aten operators (overload packet names, ``aten.<name>.<overload>``) a checked call may run outside the
candidate's kernels: allocation, views, copies and fills, which compute nothing a task asks for. Found by running the
built-in baselines, and torch.empty, zeros, view, reshape, contiguous, copy_, .to and an interpreted Triton launch,
under a dispatch mode (torch 2.13)."""


# -- the request ---------------------------------------------------------------------------------------------------
class ProtocolError(ValueError):
    """A request or result does not have the protocol's shape; the message says which field and why."""


@dataclass(frozen=True)
class OutputSlot:
    """Where one of the entry point's outputs comes from: returned (`arg` None; in order among the returned ones)
    or written in place into positional argument `arg`."""

    name: str
    arg: int | None = None


#: The version of the request the trusted side writes and the harness reads; a request of another version (a
#: worker started by another kernelgym) is refused, not half-read.
PROTOCOL_VERSION = 5


@dataclass(frozen=True)
class Request:
    """What the harness is asked to do for one grading. Paths are absolute, inside the sandbox.

    mode: ``grade`` (check, then timing where `baseline_directory` is set), ``check``, ``compile`` (one config), or
    ``time`` (timing only; for benchmarks that split a grading into processes).
    """

    mode: str
    language: str
    directory: str
    """The grading directory: the candidate's editable files beside pristine copies of the task's other files."""
    entry_point: str
    """``file:function`` the harness calls with each config's inputs."""
    input_builder: str
    builder_directory: str
    """Where the input builder is imported from: the pristine baseline copy, never the candidate's directory."""
    configs: list
    seed: int
    device: str
    outputs: list
    """`OutputSlot`s, in the order the task declares its outputs."""
    baseline_directory: str | None = None
    """The pristine baseline, timed against the candidate; None: no timing."""
    backend_file: str | None = None
    """The backend module's file where it is not one of kernelgym/backends (a registered backend; read-only in the
    sandbox); None: ``kernelgym/backends/<language>.py``."""
    build_directory: str | None = None
    """Where the trusted build step put the candidate's build (compiled backends; read-only in the sandbox)."""
    baseline_build_directory: str | None = None
    """Where the trusted build step put the baseline's build."""
    warmup: int = 10
    reps: int = 100
    rounds: int = 10
    timed_ms_per_config: float = 0.0
    """`timed_reps`'s budget: ms of the baseline's timed runs per config (0: always `reps`)."""
    input_sets: int = 4
    flush_bytes: int = 0
    tolerances: list = field(default_factory=list)
    """Per config: {"atol", "rtol"} for the timed path's check against the baseline, or None (exact)."""
    require_own_launch: bool = True
    """Fail a config where none of the candidate's own kernels ran (the backend counts them)."""
    dynamic_check: bool = False
    """Record the PyTorch operators each checked call runs (a dispatch mode of the harness's) and fail a config where
    one is not in `ALLOWED_TORCH_OPS` or `allowed_torch_ops` (the grader sets it where no outside observer runs)."""
    allowed_torch_ops: list = field(default_factory=list)
    """The task's extra allowed operators (task.yaml ``allowed_torch_ops``): aten overload packet names."""
    observe: bool = False
    """An observed run (mode ``check`` under Nsight Compute, observer.py): a warm-up call per config before the checked
    calls, a marker kernel (`MARKER_KERNEL`) before the candidate's import, after the warm-up calls, between two
    checked calls and after the last (``configs + 2`` in all), and result files named with `OBSERVED_PREFIX` in
    `results_directory`."""
    observer_tool: str = "ncu"
    """What observes an observed run: ``ncu`` (Nsight Compute; it flushes the caches before each kernel itself) or
    ``tracer`` (the CUPTI kernel tracer, tracer.py: the harness reads the flush buffer before every marker but the
    first, and flushes the trace after the last)."""
    traced: bool = False
    """A grading's own run, traced (mode ``grade`` or ``check``, ``observer_tool`` ``tracer``): its checked calls are
    the observed ones, run as an observed run runs them (warm-up calls, markers, the flush buffer, the trace flushed
    after the last marker) under the kernel tracer, which records only from the first marker to that flush; result
    files keep their plain names, and the timed runs follow, untraced."""
    results_directory: str | None = None
    """Where the result files go (default: `directory`)."""
    gpu_lock: str | None = None
    """The GPU's timing schedule (gpu_schedule.py): a file whose exclusive flock the harness holds while it times and,
    in an observed run, while the checked calls run; None: no schedule."""
    gpu_wait_s: float = 60.0
    """The longest the harness waits for its turn on `gpu_lock`, s; then it goes on without it and says so."""
    gpu_quiet_turns: bool = False
    """The schedule's shared side (`take_turn`): the harness also holds `gpu_lock` shared while it moves its inputs
    to the device and prepares the baseline, and for an observed run's warm-up calls, so that no turn overlaps them."""

    @property
    def marked(self) -> bool:
        """Whether the checked calls run as observed ones (`observe` or `traced`): a warm-up call per config, the
        markers and, under the tracer, the flush buffer."""
        return self.observe or self.traced

    # Derived paths: fixed names in the results directory, never taken from the request's JSON.
    def _out(self, name: str) -> str:
        return os.path.join(self.results_directory or self.directory, (OBSERVED_PREFIX if self.observe else "") + name)

    @property
    def result(self) -> str:
        return self._out(CHECK_RESULT)

    @property
    def time_result(self) -> str:
        return self._out(TIME_RESULT)

    @property
    def outputs_path(self) -> str:
        return self._out(OUTPUTS)

    def timed_output_path(self, index: int) -> str:
        return self._out(timed_output_name(index))

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["outputs"] = [dataclasses.asdict(o) if isinstance(o, OutputSlot) else o for o in self.outputs]
        return {"protocol_version": PROTOCOL_VERSION, **d}

    @classmethod
    def from_json(cls, obj: Any) -> "Request":
        """Validate a request read from JSON.

        Raises:
            ProtocolError: not an object, another `PROTOCOL_VERSION`, an unknown or missing field, or a field of the
                wrong type.
        """
        if not isinstance(obj, dict):
            raise ProtocolError("request: expected a JSON object")
        obj = dict(obj)
        version = obj.pop("protocol_version", None)
        if version != PROTOCOL_VERSION:
            raise ProtocolError(f"request: protocol_version {version!r}, this harness reads {PROTOCOL_VERSION}")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(obj) - set(fields))
        if unknown:
            raise ProtocolError(f"request: unknown fields {unknown}")
        types = {"mode": str, "language": str, "directory": str, "entry_point": str, "input_builder": str,
                 "builder_directory": str, "configs": list, "seed": int, "device": str, "outputs": list,
                 "baseline_directory": (str, type(None)), "backend_file": (str, type(None)), "build_directory": (str, type(None)),
                 "baseline_build_directory": (str, type(None)), "warmup": int,
                 "reps": int, "rounds": int, "timed_ms_per_config": (int, float), "input_sets": int, "flush_bytes": int, "tolerances": list,
                 "require_own_launch": bool, "dynamic_check": bool, "allowed_torch_ops": list,
                 "observe": bool, "observer_tool": str, "traced": bool,
                 "results_directory": (str, type(None)), "gpu_lock": (str, type(None)), "gpu_wait_s": (int, float),
                 "gpu_quiet_turns": bool}
        for name, f in fields.items():
            if name not in obj:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise ProtocolError(f"request: field {name!r} missing")
                continue
            if not isinstance(obj[name], types[name]) or (types[name] is int and isinstance(obj[name], bool)):
                raise ProtocolError(f"request: field {name!r} has type {type(obj[name]).__name__}")
        if obj["mode"] not in ("grade", "check", "compile", "time"):
            raise ProtocolError(f"request: mode {obj['mode']!r} is not grade, check, compile or time")
        if obj.get("observer_tool", "ncu") not in ("ncu", "tracer"):
            raise ProtocolError(f"request: observer_tool {obj['observer_tool']!r} is not ncu or tracer")
        if not all(isinstance(op, str) for op in obj.get("allowed_torch_ops", [])):
            raise ProtocolError("request: allowed_torch_ops must be a list of operator names")
        if obj.get("observe") and obj["mode"] != "check":
            raise ProtocolError("request: an observed run is mode 'check'")
        if obj.get("traced") and (obj.get("observe") or obj.get("observer_tool") != "tracer"
                                  or obj["mode"] not in ("grade", "check")):
            raise ProtocolError("request: a traced run is a grading's own (mode 'grade' or 'check', not an observed "
                                "run) under observer_tool 'tracer'")
        slots = []
        for o in obj["outputs"]:
            if not (isinstance(o, dict) and isinstance(o.get("name"), str) and set(o) <= {"name", "arg"}
                    and (o.get("arg") is None or isinstance(o.get("arg"), int))):
                raise ProtocolError(f"request: output slot {o!r} is not {{name, arg}}")
            slots.append(OutputSlot(o["name"], o.get("arg")))
        if not slots:
            raise ProtocolError("request: no outputs")
        return cls(**{**obj, "outputs": slots})


def arrange_outputs(ret: Any, args: tuple, slots: list[OutputSlot]) -> tuple:
    """The outputs of one call of the entry point, in the task's declared order: the returned ones from `ret` (the
    value itself where one output is returned, else a tuple or list of exactly that many), the in-place ones from
    their arguments in `args`. Types are not checked here (the harness checks each is a plain tensor).

    Raises:
        TypeError: the call returned the wrong number of outputs.
    """
    returned = [s for s in slots if s.arg is None]
    if len(returned) == 1:
        values = [ret]
    elif len(returned) == 0:
        values = []
    elif isinstance(ret, (tuple, list)) and len(ret) == len(returned):
        values = list(ret)
    else:
        raise TypeError(f"the entry point must return a tuple of {len(returned)} tensors "
                        f"({', '.join(s.name for s in returned)}), got {type(ret).__name__}"
                        + (f" of {len(ret)}" if isinstance(ret, (tuple, list)) else ""))
    it = iter(values)
    return tuple(next(it) if s.arg is None else args[s.arg] for s in slots)


# -- the results ---------------------------------------------------------------------------------------------------
def _text(value: Any, limit: int = 6000) -> str:
    """A candidate-reported value as a message: a string, cut to its last `limit` characters (nested JSON from a
    candidate must not reach the grade as a structure)."""
    return str(value)[-limit:]


@dataclass
class ConfigRun:
    """The harness's report of one config: it ran (`ok`) or the error it printed."""

    ok: bool
    error: str | None = None
    dynamic_check_failed: bool = False
    """The harness's dynamic check failed this config (PyTorch computed, or the dispatch-mode stack changed)."""
    launch_missing: bool = False
    """The launch counter saw none of the candidate's own kernels launched on this config."""


@dataclass
class CheckResult:
    """The harness's check stage: `stage` is ``compile`` where the candidate did not import or compile, else
    ``check``; `configs` one `ConfigRun` per config it got to; `error` a message for the whole stage."""

    stage: str
    ok: bool
    configs: list[ConfigRun]
    error: str | None = None
    gpu_turn: "GpuTurn | None" = None
    """An observed run's turn on the GPU's schedule (None: no schedule, or not an observed run)."""


def parse_check_result(obj: Any, n_configs: int) -> CheckResult:
    """Validate the harness's check result (untrusted JSON). Never raises: a malformed result is a failed stage."""
    if not isinstance(obj, dict) or obj.get("stage") not in ("compile", "check"):
        return CheckResult("check", False, [], "check result malformed")
    runs = []
    configs = obj.get("configs")
    for c in (configs if isinstance(configs, list) else [])[:n_configs]:
        if isinstance(c, dict):
            runs.append(ConfigRun(c.get("ok") is True, None if c.get("ok") is True else _text(c.get("error")),
                                  c.get("dynamic_check_failed") is True, c.get("launch_missing") is True))
        else:
            runs.append(ConfigRun(False, "config result malformed"))
    error = obj.get("error")
    return CheckResult(obj["stage"], obj.get("ok") is True and obj["stage"] == "check", runs,
                       None if error is None else _text(error), parse_gpu_turn(obj.get("gpu_turn")))


@dataclass
class TimedRuns:
    """The harness's timing of one config: per-run times of baseline and candidate (ms), by the events inside the
    graphs and around each call, how each was timed, or the error / wrong output that stopped it."""

    ok: bool
    error: str | None = None
    wrong_output: str | None = None
    baseline_runs_ms: list[float] = field(default_factory=list)
    candidate_runs_ms: list[float] = field(default_factory=list)
    baseline_outer_runs_ms: list[float] = field(default_factory=list)
    candidate_outer_runs_ms: list[float] = field(default_factory=list)
    baseline_mode: str = ""
    candidate_mode: str = ""
    output_addresses: list = field(default_factory=list)


@dataclass
class TimeResult:
    """The harness's timing stage: one `TimedRuns` per config, or an error for the whole stage."""

    ok: bool
    configs: list[TimedRuns]
    error: str | None = None
    persisting_l2_reset: bool = False
    gpu_turn: "GpuTurn | None" = None
    """The timing's turn on the GPU's schedule (None: no schedule was asked for, or no record came back)."""


@dataclass
class GpuTurn:
    """How a harness's timed (or observed) block took its turn on the GPU's schedule (harness.gpu_turn)."""

    held: bool
    """Whether it held the lock for the whole block (False: it waited `waited_s`, the limit, and went on)."""
    waited_s: float
    """How long it waited for its turn, s."""
    error: str | None = None
    """Why the lock could not be taken at all (it could not be opened), else None."""


def parse_gpu_turn(obj: Any) -> GpuTurn | None:
    """A `GpuTurn` from the harness's untrusted record, or None where it is absent or malformed."""
    if not isinstance(obj, dict) or not isinstance(obj.get("held"), bool):
        return None
    waited = obj.get("waited_s")
    if not isinstance(waited, (int, float)) or isinstance(waited, bool) or not 0 <= waited < 1e6:
        return None
    error = obj.get("error")
    return GpuTurn(obj["held"], float(waited), _text(error, 200) if isinstance(error, str) else None)


def _floats(v: Any) -> list[float]:
    if not isinstance(v, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        raise ProtocolError("run times must be a list of numbers")
    return [float(x) for x in v]


def parse_time_result(obj: Any, n_configs: int) -> TimeResult:
    """Validate the harness's timing result (untrusted JSON). Never raises: a malformed result is a failed stage."""
    if not isinstance(obj, dict):
        return TimeResult(False, [], "timing produced no result")
    if obj.get("stage") != "time":
        return TimeResult(False, [], _text(obj.get("error") or "timing failed"))
    configs = obj.get("configs")
    if not isinstance(configs, list) or len(configs) != n_configs or not all(isinstance(c, dict) for c in configs):
        return TimeResult(False, [], "timing result malformed")
    runs = []
    for c in configs:
        if c.get("wrong_output"):
            runs.append(TimedRuns(False, _text(c.get("error")), _text(c["wrong_output"], 600)))
            continue
        if c.get("ok") is not True:
            runs.append(TimedRuns(False, _text(c.get("error"))))
            continue
        try:
            runs.append(TimedRuns(
                True, None, None, _floats(c.get("baseline_runs_ms")), _floats(c.get("candidate_runs_ms")),
                _floats(c.get("baseline_outer_runs_ms", [])), _floats(c.get("candidate_outer_runs_ms", [])),
                _text(c.get("baseline_mode"), 200), _text(c.get("candidate_mode"), 200),
                c.get("output_addresses") if isinstance(c.get("output_addresses"), list) else []))
        except ProtocolError as e:
            runs.append(TimedRuns(False, f"timing result malformed: {e}"))
    return TimeResult(True, runs, None, obj.get("persisting_l2_reset") is True, parse_gpu_turn(obj.get("gpu_turn")))


# -- loading ``file:function`` ---------------------------------------------------------------------------------
def gate_path(lock: str) -> str:
    """The gate file beside the GPU's lock file `lock` (``<key>.lock`` -> ``<key>.gate``), `take_turn`'s."""
    return lock.removesuffix(".lock") + ".gate"


@contextlib.contextmanager
def take_turn(lock: str | None, wait_s: float, shared: bool = False):
    """Hold the GPU's schedule (gpu_schedule.py) for the block: the exclusive flock of the file `lock` (a turn:
    timed runs, traced checked calls) or, `shared`, its shared side (work that must not overlap a turn, beside other
    such work). A gate file beside it (`gate_path`), where there is one, lets a waiting turn go first: a turn holds
    the gate exclusively from before it waits until it ends, and shared work passes the gate before it takes the
    lock, so none starts while a turn waits. Waits at most `wait_s` in all, then runs the block without the lock.
    Yields ``{"held": bool, "waited_s": float}`` (``"error"`` where the lock could not be opened); None without
    `lock`. Opens without blocking or following a link, and takes only regular files (a FIFO would block)."""
    if not lock:
        yield None
        return
    record, t, fds = {"held": False, "waited_s": 0.0}, time.monotonic(), []
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:  # from the first open on: an interrupt while waiting must not leave a lock held
        try:
            fds.append(_open_lock(lock))
            try:
                fds.append(_open_lock(gate_path(lock)))
            except OSError:
                pass  # no gate, or not a regular file there: turns and shared work take the lock alone
            gated = len(fds) == 2 and _flock_until(fds[1], mode, t + wait_s)
            # Shared work that could not pass the gate in time goes on without the lock, as a turn that waited in
            # vain does.
            record["held"] = (gated or len(fds) == 1 or not shared) and _flock_until(fds[0], mode, t + wait_s)
            if gated and (shared or not record["held"]):
                fcntl.flock(fds[1], fcntl.LOCK_UN)  # shared work only passes the gate; a turn that waited in vain too
        except OSError as exc:
            record["error"] = str(exc)[:200]
        record["waited_s"] = round(time.monotonic() - t, 4)
        yield record
    finally:
        for fd in reversed(fds):
            # Each released and closed whatever became of another (a descriptor the candidate closed: EBADF).
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)  # for every descriptor of this open file, a duplicate included
            with contextlib.suppress(OSError):
                os.close(fd)


def _open_lock(path: str) -> int:
    """A read-only descriptor of the regular file `path`, opened without blocking or following a link.

    Raises:
        OSError: it cannot be opened (FileNotFoundError where missing), or is not a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return fd


def _flock_until(fd: int, mode: int, deadline: float) -> bool:
    """Whether the flock `mode` on `fd` was taken before `deadline` (time.monotonic); tried once at least."""
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)


def load_function(ref: str, directory: str, module_name: str):
    """Import ``file.py:function`` from `directory` as module `module_name` (replacing any module of that name in
    sys.modules) and return the function.

    Raises:
        whatever importing the file raises; AttributeError where the function is missing.
    """
    file, func = ref.split(":")
    spec = importlib.util.spec_from_file_location(module_name, os.path.join(directory, file))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {file!r} from {directory}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return getattr(module, func)
