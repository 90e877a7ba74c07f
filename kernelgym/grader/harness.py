"""Runs a candidate kernel in its own process, inside the sandbox. Standalone: imports no kernelgym.

    python harness.py request.json      # serve one request, then exit
    python harness.py --serve           # warm worker: one forked child per request (see `serve`)

The request (JSON, `protocol.Request`: the file ``protocol.py`` beside this one holds everything both sides agree
on) names the task's language (its backend, ``kernelgym/backends/<language>.py``, builds and loads the candidate and
counts its kernels' launches), the kernel's entry point and the input builder (``file:function``, relative to the
grading directory), the configs, a seed, the device, the outputs (returned, or written in place into an argument),
and what to do:

- ``check``: import the entry module, call it once per config on fresh seeded inputs, and save the
  outputs (moved to the CPU) to ``outputs.pt``. The trusted parent compares them with the reference:
  nothing here decides correctness, so patching this process cannot pass a wrong kernel.
- ``time``: per config, time the pristine baseline and the candidate interleaved in rounds (see
  `time_pair`), and save the candidate's output of one more call made the way it was timed, which the
  parent checks: a kernel honest while checked and cheap while timed fails. Every timed run's time is
  reported; the parent computes the statistics.

Everything that needs no candidate code (CUDA start, inputs, the baseline's compilation and graphs) is done
by `prepare`, before the candidate is imported; `finish` then imports the candidate and runs it. The warm
worker prepares a grading while the agent is still working, so submit-to-reward pays only for `finish`.
The request is read, and every input made from its seed is built, in a forked child process (`main`,
`in_forked_child`): the process the candidate runs in never holds the grading's seed, not even in freed memory.

The result is written as JSON to the request's ``result`` path. Stage failures are reported, not raised.
Timing runs in the same process as the candidate and can, in principle, be tampered with by it: the
timer's functions are bound before the candidate is imported, and the parent sanity-checks results.
"""
import contextlib
import dataclasses
import gc
import importlib.util
import io
import json
import mmap
import os
import pickle
import resource
import secrets
import select
import signal
import socket
import struct
import sys
import time
import traceback

import torch
import torch.utils._python_dispatch

# Bound before any candidate code runs: a candidate that later patches torch.cuda.Event.record,
# CUDAGraph.replay, synchronize or Tensor.zero_ does not reach the timer's own references.
_GPU = torch.cuda.is_available()
_Event = torch.cuda.Event if _GPU else None
_record = torch.cuda.Event.record if _GPU else None
_elapsed = torch.cuda.Event.elapsed_time if _GPU else None
_synchronize = torch.cuda.synchronize if _GPU else None
_CUDAGraph = torch.cuda.CUDAGraph if _GPU else None
_replay = torch.cuda.CUDAGraph.replay if _GPU else None
_sleep = torch.cuda._sleep if _GPU else None
_sum = torch.Tensor.sum
_copy = torch.Tensor.copy_
_fill = torch.Tensor.fill_
_isclose = torch.isclose
_all = torch.Tensor.all
_randbelow = secrets.randbelow
# The timed sets' draw (`_perturb`), again in `run_timing` where a pool was held off the GPU (`HeldPool`).
_Generator, _randn, _where, _any = torch.Generator, torch.randn, torch.where, torch.Tensor.any
_add_, _mul_, _clamp_, _to = torch.Tensor.add_, torch.Tensor.mul_, torch.Tensor.clamp_, torch.Tensor.to
_TorchDispatchMode = torch.utils._python_dispatch.TorchDispatchMode
_mode_enter, _mode_exit = _TorchDispatchMode.__enter__, _TorchDispatchMode.__exit__
_dispatch_stack_at = torch._C._get_dispatch_stack_at
# Torch's own code suspends every dispatch mode where it reads tensor values for Python (printing: str, repr and
# format of a tensor run under _disable_current_modes), and each suspension pops the modes through this module-level
# function: watched while a checked call runs (`recorded_call`), a suspension fails the call, since values read that
# way never show as operators.
_python_dispatch = torch.utils._python_dispatch
_pop_mode = _python_dispatch._pop_mode
_watch = {"on": False, "suspended": 0}


def _watched_pop_mode(*args, **kwargs):
    if _watch["on"]:
        _watch["suspended"] += 1
    return _pop_mode(*args, **kwargs)


_python_dispatch._pop_mode = _watched_pop_mode
try:
    import torch.utils.serialization
    torch.utils.serialization.config.save.compute_crc32 = False  # see _save
except (ImportError, AttributeError):
    pass


_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_file(path, name):
    """Import the Python file at `path` as module `name` (the protocol and the backends: kernelgym is not imported
    in the sandbox)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


protocol = _load_file(os.path.join(_HERE, "protocol.py"), "kernelgym_protocol")
IMPORTED_MARKER, PREPARED_MARKER, FINISHED = protocol.IMPORTED_MARKER, protocol.PREPARED_MARKER, protocol.FINISHED
load = protocol.load_function


def load_backend(language, backend_file=None):
    """The backend module of `language`: `backend_file` where the request names one (a registered backend), else
    ``kernelgym/backends/<language>.py``; bound read-only in the sandbox either way."""
    path = backend_file or os.path.join(os.path.dirname(_HERE), "backends", f"{language}.py")
    return _load_file(path, f"kernelgym_backend_{language}")


def load_entry(req, backend, directory, module_name, build_directory):
    """The callable of `req.entry_point` from `directory`: the backend's loader where it has one, else the import of
    ``file.py:function``."""
    if backend.load_entry is not None:
        return backend.load_entry(req.entry_point, directory, module_name, build_directory)
    return load(req.entry_point, directory, module_name)


def tb(limit=20):
    return "".join(traceback.format_exc(limit=limit))[-6000:]


class NotPlain(TypeError):
    """The candidate's output is not a plain tensor, or it left a torch mode active (see `_plain`)."""


_function_modes = torch._C._len_torch_function_stack
_dispatch_modes = torch._C._len_torch_dispatch_stack


def _plain(out):
    """Raise `NotPlain` (a TypeError) unless `out` is exactly a torch.Tensor and no torch function or dispatch mode
    is active. A subclass or a mode could do the work lazily, when the output is compared or
    copied out, outside the timed window (two reviews' attacks). Patching torch's own functions at import is not
    caught here: timing runs in the candidate's process (README, known limits)."""
    if type(out) is not torch.Tensor:
        raise NotPlain(f"kernel returned {type(out).__module__}.{type(out).__qualname__}, expected a plain "
                       f"torch.Tensor (not a subclass)")
    if _function_modes() or _dispatch_modes():
        raise NotPlain("a torch function or dispatch mode is active (entered by the candidate): its outputs "
                       "could be computed when copied out rather than by the kernel")


class LaunchMissing(RuntimeError):
    """A checked call launched none of the candidate's own kernels (the backend's launch counter saw none)."""


class ProvenanceError(RuntimeError):
    """The dynamic check failed a checked call: PyTorch computed during it, or the call changed the dispatch-mode
    stack (see `OpRecorder`)."""


class OpRecorder(_TorchDispatchMode):
    """A dispatch mode that records every PyTorch operator run while it is active and not in `allowed` (overload
    packet names, `protocol.ALLOWED_TORCH_OPS` and the task's own), by full name (``aten.mul.Tensor``), in the order
    first seen. Entered around each checked call (`recorded_call`), so it sees the wrapper's host code, the ops
    Triton's interpreter runs for a launch and anything a kernel body runs there. Defined and bound here, before any
    candidate code is imported. Dispatch modes are thread-local: work in another thread is not seen (the static check
    refuses threads)."""

    def __init__(self, allowed):
        super().__init__()
        self.allowed = frozenset(allowed)
        self.refused = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        packet = getattr(func, "overloadpacket", None)
        name = getattr(packet, "__name__", None)
        if getattr(func, "namespace", None) != "aten" or name not in self.allowed:
            self.refused.setdefault(str(func), None)
        return func(*args, **(kwargs or {}))


def recorded_call(fn, args, allowed):
    """`fn(*args)` inside an `OpRecorder`, exited before the result is returned (so `_plain` sees only what the
    candidate left).

    Raises:
        ProvenanceError: the call left the dispatch-mode stack otherwise than it found it (a mode pushed or popped:
            the recorder could be bypassed, or a mode left to compute later), or ran an operator outside `allowed`;
            either wins over an error of the call's own.
        whatever `fn` raises, otherwise."""
    depth = _dispatch_modes()
    recorder = OpRecorder(allowed)
    error, ret = None, None
    _mode_enter(recorder)
    _watch.update(on=True, suspended=0)
    try:
        ret = fn(*args)
    except Exception as exc:  # noqa: BLE001 - raised again below, unless the check has its own error
        error = exc
    _watch["on"] = False  # before the harness's own exit of its mode, which pops it
    if not (_dispatch_modes() == depth + 1 and _dispatch_stack_at(depth) is recorder):
        raise ProvenanceError(f"provenance: the call pushed or popped a torch dispatch mode (the harness left "
                              f"{depth + 1}, its own on top; {_dispatch_modes()} after the call)") from error
    _mode_exit(recorder, None, None, None)
    if _watch["suspended"]:
        raise ProvenanceError("provenance: the call suspended the harness's record of PyTorch operators (torch does "
                              "so to print a tensor: str, repr or format of a tensor read its values outside the "
                              "operators)") from error
    if recorder.refused:
        ops = ", ".join(f"`{op}`" for op in list(recorder.refused)[:8])
        raise ProvenanceError(f"provenance: PyTorch computed {ops} during the call (only allocation, views, copies and "
                              f"fills may run outside the candidate's kernels)") from error
    if error is not None:
        raise error
    return ret


def collect(ret, args, slots):
    """The outputs of one call in the task's declared order (`protocol.arrange_outputs`), each a plain tensor
    (`_plain`) and each returned one in memory of its own.

    Raises:
        NotPlain: an output is not a plain tensor, or a torch mode is active.
        TypeError: the call returned the wrong number of outputs.
        ValueError: a returned output shares memory with an argument or another output."""
    outs = protocol.arrange_outputs(ret, args, slots)
    for out in outs:
        _plain(out)
    # A returned output must be memory of its own: an input returned as an output (or changed in place and returned)
    # would be written by the poison and the next input set, and two outputs in one block would hide each other.
    taken = {a.untyped_storage().data_ptr(): f"argument {i}" for i, a in enumerate(args)
             if isinstance(a, torch.Tensor) and a.numel()}
    for out, slot in zip(outs, slots):
        if slot.arg is not None or not out.numel():
            continue
        ptr = out.untyped_storage().data_ptr()
        if ptr in taken:
            raise ValueError(f"output {slot.name!r} shares memory with {taken[ptr]}: return a tensor of its own "
                             f"(outputs written into an argument must be declared with `arg` in task.yaml)")
        taken[ptr] = f"output {slot.name!r}"
    return outs


def check(req, fn, inputs, backend, warmup_inputs=()):
    """Run `fn` once per config on its prepared inputs (an error string where building them failed); save the
    outputs (``outputs.pt``, keys `protocol.output_key`). Returns the result dict.

    Where the backend counts launches, a config also fails when no kernel from the candidate's own files was
    launched: the work was done some other way (a PyTorch fallback). A candidate that launches a token kernel
    and computes with PyTorch still passes that check; with `req.dynamic_check`, each call runs inside the harness's
    `OpRecorder` (`recorded_call`), and a config fails where PyTorch computed anything beyond allocation, views,
    copies and fills (`protocol.ALLOWED_TORCH_OPS`, with the task's `allowed_torch_ops`)."""
    allowed = protocol.ALLOWED_TORCH_OPS | frozenset(req.allowed_torch_ops)
    counter = (backend.LaunchCounter(req.directory) if req.require_own_launch and backend.LaunchCounter is not None
               else None)
    counting = counter is not None and counter.installed
    if req.marked:
        # Not under the schedule's shared side: candidate code (a compile, an autotune) could hold it, and with it
        # every waiting turn and, behind the gate, every grading's shared work on the host.
        _warm_up_all(fn, warmup_inputs)
    # Under an observer the checked calls hold the GPU's schedule (their device times are judged), not the warm-up
    # calls before them, where a traced run compiles the candidate's kernels.
    with gpu_turn(req) if req.marked else contextlib.nullcontext() as turn:
        configs, outputs, failed = _checked_calls(req, fn, inputs, backend, counter if counting else None, allowed)
    if failed is not None:
        return failed
    _save(outputs, req.outputs_path)
    res = {"stage": "check", "ok": True, "error": None, "configs": configs}
    if turn is not None:
        res["gpu_turn"] = turn
    return res


def _checked_calls(req, fn, inputs, backend, counter, allowed):
    """`check`'s calls, one per config: (config entries, outputs by `protocol.output_key`, None), or a compile
    failure's result dict in place of None."""
    outputs, configs = {}, []
    for i, (cfg, args) in enumerate(zip(req.configs, inputs)):
        entry = {"config": cfg, "ok": True, "error": None}
        try:
            if req.marked and i:
                _marker()  # between two checked calls, whatever happened in the first (a sticky CUDA error: raised)
            if isinstance(args, str):
                raise RuntimeError("the task's input builder failed: " + args)
            if counter is not None:
                counter.reset()
            ret = recorded_call(fn, args, allowed) if req.dynamic_check else fn(*args)
            if counter is not None and counter.count == 0:
                raise LaunchMissing(f"no {counter.what} from the candidate's files was launched: the output was "
                                    "computed some other way (a PyTorch fallback?)")
            if req.device != "cpu":
                _synchronize()
            for slot, out in zip(req.outputs, collect(ret, args, req.outputs)):
                outputs[protocol.output_key(i, slot.name)] = out.detach().to("cpu", copy=True)
        except Exception as exc:  # noqa: BLE001 - a failing kernel is data
            if backend.is_compile_error(exc) and not isinstance(exc, ProvenanceError):
                return configs, outputs, {"stage": "compile", "ok": False, "error": tb(), "configs": configs}
            entry.update(ok=False, error=tb(8), dynamic_check_failed=isinstance(exc, ProvenanceError),
                         launch_missing=isinstance(exc, LaunchMissing))
        configs.append(entry)
    if req.marked:
        try:
            _marker()
            _flush_trace()
        except Exception:  # noqa: BLE001 - a sticky CUDA error of the last call: its config fails (the trace is cut)
            if configs and configs[-1]["ok"]:
                configs[-1].update(ok=False, error="after the last checked call: " + tb(8))
    return configs, outputs, None


def _warm_up_all(fn, inputs):
    """Observed run: one call per config before the checked ones (JIT compilation and autotuning runs happen here, so
    the observer times the checked calls' kernels alone), on inputs of other values (`protocol.warmup_seed`: work done
    here cannot be reused by the checked call); then a marker. An error here is the checked call's to report."""
    for args in inputs:
        if isinstance(args, str):
            continue
        try:
            fn(*args)
            _synchronize()
        except Exception:  # noqa: BLE001 - the checked call raises it again, and reports it
            pass
    try:
        _marker()
    except Exception:  # noqa: BLE001 - a sticky CUDA error from a warm-up call: each checked call reports it
        pass


_observed = {"flush": None, "trace": None, "enable": None}
"""A run under the kernel tracer (`Request.observer_tool` ``tracer``, observed or traced): the buffer read to flush the
caches before each marker but the first, and the tracer's flush and start/stop functions."""


def _marker(first=False):
    """Launch the observed run's marker kernel (`protocol.MARKER_KERNEL`) after everything queued before it: the
    observer splits the list of kernels it saw at these launches. Under the kernel tracer, every marker but the
    `first` follows a read of the flush buffer (one reduction kernel, which the parent drops from the list), so each
    checked call starts with caches as cold as Nsight Compute's cache control leaves them."""
    _synchronize()
    if first and _observed["enable"] is not None:
        _observed["enable"](1)  # a traced run records from here (tracer.env: deferred)
    if not first and _observed["flush"] is not None:
        _sum(_observed["flush"])
        _synchronize()
    _sleep(1)
    _synchronize()


def _flush_trace():
    """Under the kernel tracer: write its pending records and the trace's end line now (after the last marker)."""
    if _observed["trace"] is not None:
        _observed["trace"]()


def _persisting_l2_reset():
    """A function that drops any persisting-L2 carve-out (cudaLimitPersistingL2CacheSize -> 0, then
    cudaCtxResetPersistingL2Cache), or None where cuda-python is absent (reported in the result)."""
    try:
        from cuda.bindings import runtime as cudart
    except ImportError:
        try:
            from cuda import cudart
        except ImportError:
            return None

    def reset():
        cudart.cudaDeviceSetLimit(cudart.cudaLimit.cudaLimitPersistingL2CacheSize, 0)
        cudart.cudaCtxResetPersistingL2Cache()
    return reset


def _tensors(args):
    return [a for a in args if isinstance(a, torch.Tensor)]


_streams = {}


def _capture_stream():
    """The one side stream every graph is captured on (as torch.cuda.graph's default_capture_stream). The caching
    allocator reuses a freed block only for the stream it was allocated on: with a new stream per capture, the
    candidate's graph could not reuse the block the baseline's output left in the shared pool and would write its
    output elsewhere, which times differently: one capture stream keeps both outputs at the same address."""
    if "capture" not in _streams:
        _streams["capture"] = torch.cuda.Stream()
    return _streams["capture"]


class Timed:
    """One kernel prepared for timing on one config: its static input buffers (`static_args`, shared by the
    baseline and the candidate so both read the same addresses), and a CUDA graph of one call where capture
    works (else eager calls, timed with a device-wide synchronize before the end mark so work on any stream
    counts). Graphs captured into the same memory `pool` after the other kernel's output was released get
    the same output addresses, too: nothing about where the data lives differs between the two.

    Where PyTorch supports it (``Event(external=True)``), the graph holds its own start and end event nodes
    around the call (`inner`): the timed window then excludes the graph's launch latency (about 2 µs on the
    H200, which outer events count), leaving the kernels' device time. All work captured on other streams
    must join the capture stream before capture ends, so it lies inside the window."""

    def __init__(self, fn, static_args, warmup, slots, pool=None):
        self.fn, self.args, self.slots = fn, static_args, slots
        self.call_ms = None  # ms of one call after capture (`_time_one_call`); the baseline's sizes the timed runs
        for _ in range(warmup):  # compilation, JIT and autotuning happen here, before any timing
            self.out = collect(fn(*static_args), static_args, slots)
        _synchronize()
        self.out = None
        self.graph, self.inner, self.mode, self.out_address = None, False, "events+sync", None
        try:
            side = _capture_stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fn(*static_args)
            torch.cuda.current_stream().wait_stream(side)
            _synchronize()
        except Exception:  # noqa: BLE001 - fails again below, if at all
            pass
        for inner in (True, False):
            try:
                self._capture(side, pool, inner)
                self.mode = "cuda-graph, events in the graph" if inner else "cuda-graph"
                break
            except NotPlain:
                raise  # not a capture problem: no eager fallback for it
            except Exception:  # noqa: BLE001 - capture is not always possible; fall back to eager
                self.graph, self.inner = None, False
                torch.cuda.synchronize()

    def _capture(self, side, pool, inner):
        # Captured with capture_begin/capture_end on the side stream rather than `with torch.cuda.graph()`,
        # which also runs gc.collect() and empty_cache() per capture (tens of ms each, in the reward's latency).
        if inner:
            self.start, self.end = _Event(enable_timing=True, external=True), _Event(enable_timing=True, external=True)
        graph = _CUDAGraph()
        with torch.cuda.stream(side):
            graph.capture_begin(pool=pool)
            try:
                if inner:
                    _record(self.start)
                ret = self.fn(*self.args)
                if inner:
                    _record(self.end)
            finally:
                graph.capture_end()
        _synchronize()
        for _ in range(3):  # the first replays upload the graph; keep them out of the timed runs
            _replay(graph)
        _synchronize()
        if inner and not _elapsed(self.start, self.end) > 0:
            raise RuntimeError("events in the graph did not time it")
        self.out = collect(ret, self.args, self.slots)  # also here: the call captured may return what warm-up did not
        self.graph, self.inner = graph, inner
        self.out_address = tuple(o.data_ptr() for o, s in zip(self.out, self.slots) if s.arg is None)

    def poison(self):
        """Fill a graph's returned output blocks with NaN (floating-point outputs; their type was checked at capture):
        a run that writes nothing then leaves NaN. In-place outputs are arguments, refreshed before each run. Eager
        calls return new tensors each time: nothing to poison."""
        if self.graph is not None:
            for out, slot in zip(self.out, self.slots):
                if slot.arg is None and out.is_floating_point():
                    _fill(out, float("nan"))

    def refresh(self, values):
        for dst, src in zip(_tensors(self.args), _tensors(values)):
            _copy(dst, src)

    def call(self):
        if self.graph is not None:
            _replay(self.graph)
        else:
            self.out = collect(self.fn(*self.args), self.args, self.slots)


def time_pair(base, cand, pool, flush, reps, rounds, reset_l2, expected=None, tolerances=None):
    """Interleave baseline and candidate in `rounds` rounds (order alternating), reps/rounds timed runs each, one
    run at a time, with Python's garbage collector off (as timeit does: a collection between the flush and the
    launch leaves the GPU idle before that run and slows it).

    Before each timed run, outside the timed window: fresh input values copied in, the graphs' shared output block
    poisoned with NaN, and the cache flushed (a read of `flush_bytes`, which leaves clean lines), so neither kernel
    reads a warm L2. Every run is timed by events around the call (`outer`) and, where both graphs hold them, by
    the events inside (`inner`, without the graph's launch latency). In every block of runs one run, drawn at
    random when the block starts, has its output checked, outside the window, against `expected[k]`, the
    baseline's outputs for the input set `k` it was given, within `tolerances` (per output: (atol, rtol), or None for
    equal values): a kernel that computes
    only while checked (it recognizes the verification inputs, or counts its calls) fails. Both kernels are
    checked the same way, so the work around their runs stays the same.

    Returns ({"baseline": [ms per run, in round order], "candidate": [...], "baseline_outer": [...],
    "candidate_outer": [...]}, how "baseline"/"candidate" were timed, the first wrong run as a message or None)."""
    per_round = max(reps // rounds, 1)
    inner = base.inner and cand.inner
    times = {"baseline": [], "candidate": [], "baseline_outer": [], "candidate_outer": []}
    start, end = _Event(enable_timing=True), _Event(enable_timing=True)
    wrong = None
    if reset_l2 is not None:
        reset_l2()
    k = 1  # pool[0] (the verification inputs) comes last in each cycle, never right before verification

    def stage(t):  # fresh inputs, poison and the flush, queued before the run they are for
        nonlocal k
        t.refresh(pool[k % len(pool)])
        k += 1
        cand.poison()  # the block both graphs write: a run that writes nothing leaves NaN
        if flush is not None:
            # Evict by reading (flush_bytes >= 2 x the last-level cache): the lines left behind are clean,
            # so the timed kernel pays no write-back of the flush's own data (a write-based flush did:
            # ratios came out 2-12% below ncu's, whose cache control leaves clean caches). A float32 sum reads
            # 256 MiB in 68 us on the H200; the int32 one it replaced took 362 us (int64 accumulation).
            _sum(flush)
        return (k - 1) % len(pool)

    collecting = gc.isenabled()
    gc.disable()
    try:
        for r in range(rounds):
            order = (("baseline", base), ("candidate", cand)) if r % 2 == 0 else (("candidate", cand), ("baseline", base))
            for who, t in order:
                checked = _randbelow(per_round)
                for j in range(per_round):
                    # One run at a time: a graph's events are re-recorded by its next replay, and a run queued behind
                    # the next run's refresh and flush is timed with the host's work in between.
                    used = stage(t)
                    _record(start)
                    t.call()
                    if t.graph is None:
                        _synchronize()  # device-wide: work on a side stream is counted
                    _record(end)
                    _synchronize()
                    times[who + "_outer"].append(_elapsed(start, end))
                    times[who].append(_elapsed(t.start, t.end) if inner else times[who + "_outer"][-1])
                    if j == checked and expected is not None and wrong is None:
                        # The baseline's graph released its output tensor when prepared: it writes the block the
                        # candidate's graph writes (one pool, one capture stream), unless the candidate's graph put
                        # its output elsewhere; then the same check runs on that block, for the same work, unread.
                        out = t.out if t.out is not None or cand.graph is None else cand.out
                        if out is not None:
                            found = _wrong_output(out, expected[used], tolerances, who, len(times[who]), used)
                            shared = t is cand or t.out is not None or cand.out_address == base.out_address
                            wrong = found if shared else None
    finally:
        if collecting:
            gc.enable()
    return times, ("events in the graphs" if inner else "events around each call"), wrong


def _wrong_output(outs, exps, tolerances, who, run, used):
    """None where every output in `outs` matches its `exps` (same shape and dtype; within its tolerance (atol, rtol),
    NaN only where the expected value has NaN; or equal where its tolerance is None); else a message naming `who`'s
    timed run `run` and input set `used`."""
    for out, exp, tolerance in zip(outs, exps, tolerances):
        try:
            _plain(out)
        except NotPlain as e:
            return f"{who}'s timed run {run} (input set {used}): {e}"
        if out.shape != exp.shape or out.dtype != exp.dtype:
            return f"{who}'s timed run {run} (input set {used}) returned {type(out).__name__} {getattr(out, 'shape', '')}"
        if tolerance is None:
            if bool(_all(out == exp)):
                continue
            what = "exactly"
        else:
            atol, rtol = tolerance
            if out.element_size() == 1:  # fp8: no arithmetic on it in PyTorch; compared in fp32
                out, exp = out.float(), exp.float()
            if bool(_all(_isclose(out, exp, rtol=rtol, atol=atol, equal_nan=True))):
                continue
            what = f"beyond atol={atol:g}, rtol={rtol:g}"
        return (f"{who}'s timed run {run} (input set {used}): the output differs from the baseline's for the same "
                f"inputs {what} (a kernel must compute the same in every timed run as when checked)")
    return None


class Prepared:
    """What `prepare` made before the candidate is imported: the check inputs per config (and the observed run's
    warm-up inputs), and for timing the verification inputs (on the CPU, as built), the flush buffer, the
    persisting-L2 reset and per config (config, input pool, static arguments, graph memory pool, the baseline's
    `Timed` or the error that stopped it). Inputs are argument tuples, or the builder's error (a traceback string)."""

    def __init__(self, backend, check_inputs, timing=None, flush=None, reset_l2=None, warmup_inputs=(),
                 verify_inputs=()):
        self.backend, self.check_inputs, self.timing = backend, check_inputs, timing
        self.flush, self.reset_l2, self.warmup_inputs, self.verify_inputs = flush, reset_l2, warmup_inputs, verify_inputs


def prepare(req, inputs=None):
    """Everything that runs no candidate code: CUDA start, the check inputs (`protocol.check_seed`, as the parent
    builds them), and where the request times, the baseline's build, compilation, input pools and graphs. `inputs`:
    what `seeded_inputs` built for `req` (`main` has them built with the request read); None: built now, in a
    forked child as well (`in_forked_child`), from `req.seed`. Returns `Prepared`.

    Raises:
        RuntimeError: the input builder could not be loaded, or its process died (see `in_forked_child`)."""
    backend = load_backend(req.language, req.backend_file)
    if inputs is None:
        inputs = in_forked_child(lambda: seeded_inputs(req))
    t = time.monotonic()
    with gpu_turn(req, shared=True):  # quiet turns: no turn of another grading overlaps this work on the GPU
        state = _prepare_on_device(req, backend, inputs, t)
    return state


def _prepare_on_device(req, backend, inputs, t):
    """`prepare`'s work on the device: the inputs moved, the observer's first kernel and flush buffer, the baseline
    prepared (where the request times). Returns `Prepared`."""
    check_inputs = _moved(inputs["check"], req.device)
    warmup_inputs = _moved(inputs["warmup"], req.device)
    if req.device != "cpu":
        tracer = req.marked and req.observer_tool == "tracer"
        if tracer:
            _observed["trace"], _observed["enable"] = _tracer_function("flush"), _tracer_function("enable")
            started = _observed["enable"] is not None and _observed["enable"](1)  # CUPTI's own start paid below
            if req.traced and not (started and _observed["trace"] is not None):
                # Before the prepared marker: no candidate code has run, and the grading is the machine's to retry.
                raise RuntimeError("the kernel tracer is not loaded here or CUPTI refused to record: a traced run "
                                   "cannot observe")
        if req.marked:  # the profiler's first kernel costs about 0.6 s: paid here, before an observed run's "go"
            _fill(torch.empty(1, device=req.device), 0.0)
        if tracer:
            _observed["flush"] = torch.ones(max(req.flush_bytes, 4) // 4, dtype=torch.float32, device=req.device)
        _synchronize()
        if req.traced and _observed["enable"] is not None:
            _observed["enable"](0)  # the baseline's preparation is not traced: its graphs are captured unobserved
    state = Prepared(backend, check_inputs, warmup_inputs=warmup_inputs, verify_inputs=inputs["verify"])
    t = _phase("prepare.device", t)  # the inputs moved to the device (CUDA started beside their build: main)
    if req.mode in ("grade", "time") and req.baseline_directory:
        base_fn = load_entry(req, backend, req.baseline_directory, "kernelgym_baseline", req.baseline_build_directory)
        prepare_baseline(req, state, base_fn)
        if any(isinstance(entry[1], HeldPool) for entry in state.timing or ()):
            # What the pools held on the host took on the GPU goes back to the driver, for the other envs' processes
            # on this card: this process's allocator would keep it reserved, unused until the timed runs. Here, not
            # in `prepare_baseline`, whose last config's buffers are still referenced until it returns.
            torch.cuda.empty_cache()
        _phase("prepare.baseline", t)  # its module loaded, kernels compiled or read from the cache, pools, graphs
    return state


def _tracer_function(name):
    """The kernel tracer's ``kernelgym_trace_<name>`` (tracer.py: ``flush``, ``enable``), bound before any candidate
    code runs; None where the tracer is not loaded (the parent then finds no trace and fails the observation)."""
    library = os.environ.get("CUDA_INJECTION64_PATH")
    if not library:
        return None
    import ctypes
    try:
        function = getattr(ctypes.CDLL(library), f"kernelgym_trace_{name}")
    except (OSError, AttributeError):
        return None
    if name == "flush":
        function.restype = ctypes.c_ulonglong
    else:
        function.argtypes, function.restype = [ctypes.c_int], ctypes.c_int
    return function


def seeded_inputs(req):
    """Every input made from `req.seed`, by the task's input builder, on the CPU: ``{"check": per config (the first
    only in mode ``compile``), "warmup": the observed run's warm-up inputs (`protocol.warmup_seed`: the same
    shapes, other values; empty unless observed), "verify": the timed path's verification inputs per config
    (`protocol.verify_seed`; empty unless the request times)}``. Each entry is an argument tuple or the builder's
    error (a traceback string), which the call on that config reports. Meant for a forked child
    (`in_forked_child`): the builder's generator, seeded from the seed, is freed there. The CPU gives the same values
    as the request's device: every built-in builder draws on the CPU and moves its tensors last.

    Raises:
        whatever loading the input builder raises."""
    works = input_set_builds(req)
    # Several sets: each built in a child of its own, at once (about a second less before a timed grading is ready).
    built = in_forked_children(list(works.values())) if len(works) > 1 else [works["check"]()]
    return {"warmup": [], "verify": [], **dict(zip(works, built))}


def input_set_builds(req):
    """The input sets `req` needs, in order, each as a function that builds it (`seeded_inputs`): ``{"check":
    build, "warmup": build (observed or traced only), "verify": build (timed only)}``.

    Raises:
        whatever loading the input builder raises."""
    # From the pristine copy (read-only in the sandbox), never from the grading directory the candidate can write.
    builder = load(req.input_builder, req.builder_directory, "kernelgym_inputs")
    configs = req.configs[:1] if req.mode == "compile" else req.configs
    timed = req.mode in ("grade", "time") and bool(req.baseline_directory)
    sets = {"check": (configs, protocol.check_seed)}
    if req.marked:
        sets["warmup"] = (configs, protocol.warmup_seed)
    if timed:
        sets["verify"] = (req.configs, protocol.verify_seed)
    return {name: (lambda c=c, f=f: _build_inputs(builder, req.seed, c, f)) for name, (c, f) in sets.items()}


def _build_inputs(builder, seed, configs, seed_of):
    """Per config, the inputs `builder` makes on the CPU with seed ``seed_of(seed, index)``, or the builder's error
    (a traceback string)."""
    inputs = []
    for i, cfg in enumerate(configs):
        try:
            inputs.append(tuple(builder(cfg, seed_of(seed, i), "cpu")))
        except Exception:  # noqa: BLE001 - reported per config
            inputs.append(tb(8))
    return inputs


def _moved(inputs, device):
    """`inputs` (per config, as `_build_inputs` gives them) with every tensor moved to `device`."""
    return [args if isinstance(args, str) else tuple(_to(a, device) if isinstance(a, torch.Tensor) else a for a in args)
            for args in inputs]


def in_forked_child(work):
    """The value of `work()`, computed in a forked child process, which hands it back (`_send_value`) and exits:
    whatever `work` held or freed (the seed, a generator seeded from it, the request's text) ends with that process,
    so nothing of it is left in this one for the candidate, imported later, to read back (an uninitialised
    allocation reuses freed memory). `work` must not use CUDA: a child forked after CUDA started cannot.

    Raises:
        protocol.ProtocolError: `work` raised one (a malformed request), with its message.
        RuntimeError: `work` raised anything else (its traceback in the message), or the child died first."""
    return in_forked_children([work])[0]


def in_forked_children(works):
    """`in_forked_child` of each of `works` at once, each in a child of its own (so in parallel: a task's input
    builder draws its largest tensors on one CPU thread), and their values in order. Processes, not threads: a
    builder may seed a global generator. The same errors as `in_forked_child`, for the first work that failed."""
    return _collect(_fork_each(works))


def _collect(children):
    """The values of `_fork_each`'s `children`, in order, once each has sent its own and exited (the errors of
    `in_forked_child`, for the first that failed)."""
    answers = []
    for pid, sock in children:  # each child sends once its value is computed: one after another
        with sock:
            answers.append(_receive_value(sock))
        answers[-1] = (answers[-1], os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    return [_unwrapped(answer, code) for answer, code in answers]


def _socket_pair():
    """(this end, the other end) of a Unix socket pair for `_send_value`, neither inherited across an exec."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def _fork_each(works, ends=None):
    """Fork a child for each of `works` (`_forked_work`), now; returns their (pid, this end of the socket it sends
    its value on). With `ends` (one per work: the sending ends of sockets a process further up holds the other end
    of), each child sends there instead, and the socket returned is None: the value skips this process."""
    sys.stdout.flush()  # else what is buffered here would be written twice, once by each child
    sys.stderr.flush()
    children = []
    for i, work in enumerate(works):
        mine, theirs = _socket_pair() if ends is None else (None, ends[i])
        pid = os.fork()
        if pid == 0:
            for _, sock in children:
                if sock is not None:
                    sock.close()
            if mine is not None:
                mine.close()
            _forked_work(work, theirs)
        if mine is not None:
            theirs.close()  # so that a child that dies unsent is an end of file here
        children.append((pid, mine))
    return children


def _unwrapped(answer, code):
    """The value of a child's ("ok" | "protocol" | "error", value) answer, given its exit code (the errors of
    `in_forked_child`); `answer` None: it sent none."""
    if answer is None or code != 0:
        raise RuntimeError(f"the harness's input process died (exit code {code})")
    kind, value = answer
    if kind == "protocol":
        raise protocol.ProtocolError(value)
    if kind != "ok":
        raise RuntimeError(value)
    return value


def _forked_work(work, sock):
    """In a child of `in_forked_children`: compute `work()`, send ("ok" | "protocol" | "error", value) on `sock`
    (`_send_value`), and exit."""
    code = 1
    try:
        torch.set_num_threads(1)  # an OpenMP thread pool of the parent's is not there after fork
        try:
            answer = ("ok", work())
        except protocol.ProtocolError as exc:
            answer = ("protocol", str(exc))
        except Exception:  # noqa: BLE001 - raised again in the parent
            answer = ("error", tb())
        _send_value(sock, answer)
        code = 0
    except BaseException:  # noqa: BLE001 - the parent reports the exit
        traceback.print_exc()
    finally:
        os._exit(code)


# A value goes as a byte stream over memfds (each at most `_segment_bytes`, under the sandbox's file-size limit),
# whose descriptors travel on a Unix socket (SCM_RIGHTS) with the stream's layout: every tensor storage's bytes
# (each at a multiple of _ALIGN, and inside one memfd where it fits in one), then a pickle in which each dense CPU
# tensor is a persistent id naming its storage. The sender's bytes are copied by the kernel (pwrite) once; the
# receiver maps each storage from its memfd (private, copy on write), where pickling a tensor through a pipe copied
# the bytes three or four times, and reading them back (preadv) once more.
_ALIGN = 64
_SEGMENT_BYTES = 1 << 30
_LAYOUT = struct.Struct("<QQQ")  # the pickle's offset and length, the bytes per memfd


def _segment_bytes():
    """Bytes per memfd: 1 GiB, or less where this process's file-size limit (RLIMIT_FSIZE) is lower."""
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if soft == resource.RLIM_INFINITY:
        return _SEGMENT_BYTES
    return max(_ALIGN, min(_SEGMENT_BYTES, soft // _ALIGN * _ALIGN))


def _send_value(sock, value):
    """Send `value` (any picklable value; its dense CPU tensors by their storages' bytes, each storage once, so
    views keep sharing it) on the Unix socket `sock`, for `_receive_value`."""
    storages = {}  # (address, bytes) -> (offset in the stream, storage)
    end = [0]
    segment = _segment_bytes()

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            if type(obj) is not torch.Tensor or obj.layout != torch.strided or obj.device.type != "cpu" \
                    or obj.is_quantized or obj.is_nested or obj.is_conj() or obj.is_neg():
                return None  # pickled as usual
            storage = obj.untyped_storage()
            key = (storage.data_ptr(), storage.nbytes())
            if key not in storages:
                padded = max(1, -(-storage.nbytes() // _ALIGN)) * _ALIGN  # an empty one too: offsets name storages
                if end[0] % segment + padded > segment and padded <= segment:
                    end[0] += segment - end[0] % segment  # in one memfd, so the receiver maps it whole
                storages[key] = (end[0], storage)
                end[0] += padded
            return ("tensor", id(obj), storages[key][0], storage.nbytes(), str(obj.dtype).removeprefix("torch."),
                    obj.storage_offset(), tuple(obj.shape), obj.stride(), obj.requires_grad)

    buffer = io.BytesIO()
    Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    data = buffer.getbuffer()
    fds = [os.memfd_create("kernelgym-value", os.MFD_CLOEXEC) for _ in range(-(-(end[0] + len(data)) // segment))]
    try:
        for offset, storage in storages.values():
            _segmented_io(os.pwrite, fds, segment, torch.empty(0, dtype=torch.uint8).set_(storage).numpy(), offset)
        _segmented_io(os.pwrite, fds, segment, data, end[0])
        socket.send_fds(sock, [_LAYOUT.pack(end[0], len(data), segment)], fds)
    finally:
        for fd in fds:
            os.close(fd)


def _receive_value(sock):
    """The value `_send_value` sent on `sock`, every tensor in memory of this process alone: mapped privately (copy
    on write) from the memfd that holds it, or read into fresh memory where it spans two; None where the sender
    closed its end (or died) before sending."""
    message, fds, _, _ = socket.recv_fds(sock, _LAYOUT.size, 1024)
    objects = {}  # id in the sender -> tensor; storages by offset in the stream
    maps = {}  # memfd index -> its private mapping
    try:
        if len(message) != _LAYOUT.size:
            return None
        at, size, segment = _LAYOUT.unpack(message)
        data = bytearray(size)
        _segmented_io(_preadv, fds, segment, data, at)

        class Unpickler(pickle.Unpickler):
            def persistent_load(self, pid):
                _, ident, offset, nbytes, dtype, storage_offset, shape, stride, requires_grad = pid
                if ident not in objects:
                    if offset not in objects:
                        objects[offset] = _received_storage(fds, segment, maps, offset, nbytes)
                    tensor = torch.empty(0, dtype=getattr(torch, dtype)).set_(objects[offset], storage_offset,
                                                                              shape, stride)
                    objects[ident] = tensor.requires_grad_() if requires_grad else tensor
                return objects[ident]

        # Not restricted: only this harness's own forked child sent it (trusted code, before any candidate ran), and
        # a builder's arguments may be any picklable value.
        return Unpickler(io.BytesIO(data)).load()
    finally:
        # The class made per call lives until a garbage collection (a class is a reference cycle): what its method
        # reaches goes now, so a value dropped later frees its mappings with it.
        objects.clear()
        maps.clear()
        for fd in fds:
            os.close(fd)


def _received_storage(fds, segment, maps, offset, nbytes):
    """The storage of `nbytes` at `offset` of the stream `fds` hold (`_receive_value`): a view of the private
    mapping of its memfd (made once per memfd, in `maps`), or fresh memory where it spans two memfds or is empty.

    Raises:
        RuntimeError: a memfd ends before the storage does (its writer died part-way)."""
    index, within = divmod(offset, segment)
    if nbytes and within + nbytes <= segment:
        if index not in maps:
            length = os.fstat(fds[index]).st_size
            if length < within + nbytes:
                raise RuntimeError("the harness's input process sent a short value")
            maps[index] = mmap.mmap(fds[index], length, flags=mmap.MAP_PRIVATE,
                                    prot=mmap.PROT_READ | mmap.PROT_WRITE)
        return torch.frombuffer(maps[index], dtype=torch.uint8, count=nbytes, offset=within).untyped_storage()
    raw = torch.empty(nbytes, dtype=torch.uint8)
    _segmented_io(_preadv, fds, segment, raw.numpy(), offset)
    return raw.untyped_storage()


def _preadv(fd, buffer, offset):
    return os.preadv(fd, [buffer], offset)


def _segmented_io(op, fds, segment, buffer, offset):
    """`op` (os.pwrite, or `_preadv`) over all of `buffer` at `offset` of the stream that `fds` hold, `segment`
    bytes each, in calls under Linux's cap on one read or write.

    Raises:
        RuntimeError: a memfd ends first (its writer died part-way)."""
    view = memoryview(buffer).cast("B")
    while len(view):
        index, within = divmod(offset, segment)
        n = op(fds[index], view[:min(segment - within, _SEGMENT_BYTES)], within)
        if n == 0:
            raise RuntimeError("the harness's input process sent a short value")
        view, offset = view[n:], offset + n


def prepare_baseline(req, state, base_fn):
    """Input pools, shared static arguments and the baseline's prepared timing (graph) for every config, plus
    the flush buffer. Baseline graphs are captured before the candidate module is imported, so code the
    candidate runs at import cannot reach the baseline's launches."""
    shared = _observed["flush"]  # a traced run's (the same size): one buffer for both
    state.flush = ((shared if shared is not None and shared.numel() == req.flush_bytes // 4 else
                    torch.ones(req.flush_bytes // 4, dtype=torch.float32, device="cuda")) if req.flush_bytes else None)
    state.reset_l2 = _persisting_l2_reset()
    state.timing = []
    # The pool's perturbations: no one reproduces them (every timed run is checked against the baseline's outputs
    # for its own input set, computed here), so they are drawn from a fresh secret, never from the grading's seed.
    gen = torch.Generator(device="cuda").manual_seed(secrets.randbits(63))
    for i, cfg in enumerate(req.configs):
        # pool[0]: the verification inputs (seed + 1000 + i, built as the parent builds them, in the forked child of
        # `seeded_inputs`); the other sets are fresh values derived on the GPU (cheap), so consecutive timed runs
        # never see the same contents.
        try:
            built = state.verify_inputs[i]
            if isinstance(built, str):
                raise RuntimeError("the task's input builder failed: " + built)
            verify = _moved([built], "cuda")[0]
            drawn_from = gen.get_state()
            pool = timing_pool(verify, gen, req.input_sets)
            # What every timed run of the candidate must match: the baseline's outputs on each input set (computed on
            # copies: an in-place output must not change the pool's inputs).
            expected = []
            for args in pool:
                copies = tuple(_clone(a) for a in args)
                expected.append(tuple(o.detach().clone() for o in collect(base_fn(*copies), copies, req.outputs)))
            static, graph_pool = tuple(_clone(a) for a in verify), torch.cuda.graph_pool_handle()
            base = Timed(base_fn, static, req.warmup, req.outputs, graph_pool)
            base.call_ms = _time_one_call(base)
            base.out = None  # releases the output block for the candidate's graph (same pool, same address)
            if _nbytes(pool) + _nbytes(expected) > _POOL_ON_HOST_BYTES:
                # Until this config is timed (`run_timing` restores it): every config's pool on the GPU at once
                # holds the sum of them per env for the whole grading (matmul: about 9 GB).
                pool, expected = HeldPool(built, drawn_from, req.input_sets), _moved(expected, "cpu")
            state.timing.append((cfg, pool, static, graph_pool, base, expected))
        except Exception:  # noqa: BLE001
            state.timing.append((cfg, None, None, None, tb(8), None))
    _synchronize()


def _clone(a):
    return a.clone() if isinstance(a, torch.Tensor) else a


def baseline_out_of_memory(state):
    """The last line of the first error of `prepare_baseline` that is the GPU running out of memory, or None."""
    for entry in state.timing or ():
        error = entry[4]
        if isinstance(error, str) and ("OutOfMemoryError" in error or "CUDA out of memory" in error):
            return error.strip().splitlines()[-1][:300]
    return None


def _time_one_call(t):
    """One call of `t` (a `Timed`) between events, ms."""
    start, end = _Event(enable_timing=True), _Event(enable_timing=True)
    _synchronize()
    _record(start)
    t.call()
    if t.graph is None:
        _synchronize()  # as `time_pair` times an eager call: work on a side stream is counted
    _record(end)
    _synchronize()
    return _elapsed(start, end)


#: A config's input pool and expected outputs together larger than this wait on the host until that config is timed.
_POOL_ON_HOST_BYTES = 256 << 20


def _nbytes(sets):
    """Bytes of the tensors in `sets` (argument or output tuples)."""
    return sum(a.numel() * a.element_size() for args in sets for a in args if isinstance(a, torch.Tensor))


def timing_pool(verify, gen, sets):
    """One config's `sets` timed input sets (argument tuples, on `verify`'s device): `verify`, the verification set,
    then `sets - 1` sets perturbed from it (`_perturb`) with `gen` (a `torch.Generator` on that device). Drawn again
    from the same `gen` state they are the same, bit for bit (`HeldPool`)."""
    return [verify] + [tuple(_perturb(a, gen) for a in verify) for _ in range(sets - 1)]


class HeldPool:
    """A config's timing pool held off the GPU until that config is timed: the verification set as built (on the
    host) and the generator state its perturbed sets were drawn from. Held so, not as host copies, the perturbed sets
    cost no host memory and no copies either way (matmul: about 4.4 GB of its 6 GB per env)."""

    def __init__(self, built, drawn_from, sets):
        self.built, self.drawn_from, self.sets = built, drawn_from, sets

    def restore(self, device):
        """The pool `timing_pool` drew, on `device` ("cuda", or "cpu" where the state is a CPU generator's)."""
        verify = _moved([self.built], device)[0]
        gen = _Generator(device=device)
        gen.set_state(self.drawn_from)
        return timing_pool(verify, gen, self.sets)


def _perturb(a, gen):
    """One more timed input set's argument from the verification set's `a`: a floating tensor (any shape and dtype,
    on `gen`'s device) with each element scaled by 1 + 0.05·N(0, 1), in its dtype and within its finite range (an
    infinity or a value near the dtype's largest becomes the largest finite one); an all-zero one gets 0.05·N(0, 1)
    added, so its sets still differ; any other argument copied.

    Relative, not absolute: matmul's B (std 1/64 at K=4096) under 0.05 absolute noise triples its scale, so the timed
    sets would leave the task's distribution; each element's own scale also keeps zeros, signs and masks (-1e4 beside
    0, or the dtype's lowest) as the builder drew them. Peak memory: one fp32 tensor of `a`'s shape beside it."""
    if isinstance(a, torch.Tensor) and a.is_floating_point():
        keep = _any(a)  # a device-side choice: no host sync between the sets' launches
        y = _mul_(_randn(a.shape, generator=gen, device=a.device, dtype=torch.float32), 0.05)
        y = _mul_(_add_(y, keep), _where(keep, a, 1))  # (1 + noise) * a, or noise where a is all zeros
        info = torch.finfo(a.dtype)
        return _to(_clamp_(y, info.min, info.max), a.dtype)
    return _clone(a)


def run_timing(req, state, cand_fn):
    """Time the candidate against the prepared baseline on every config, in task order; save its timed-path output
    per config (`protocol.timed_output_name`) as soon as that config is done. Task order, not largest first: small
    configs timed after large ones read slow (benchmarks/results/README.md has the measurements)."""
    results = []
    for i, (cfg, pool, static, graph_pool, base, expected) in enumerate(state.timing):
        t = time.monotonic()
        entry = {"config": cfg, "ok": False, "error": None}
        if isinstance(base, str):
            entry["error"] = "baseline failed: " + base
            results.append(entry)
            continue
        try:
            if isinstance(pool, HeldPool):  # held off the GPU by `prepare_baseline`; gone after this turn
                cand = None  # the last config's graph and buffers: freed before this pool is drawn beside them
                pool, expected = pool.restore("cuda"), _moved(expected, "cuda")
                torch.cuda.empty_cache()  # the draw's fp32 temporaries, back to the other envs' processes
            if not len(pool) == len(expected) == req.input_sets:  # every timed set checked against its own outputs
                raise RuntimeError(f"the timing pool holds {len(pool)} input sets and {len(expected)} expected "
                                   f"outputs where the request asks for {req.input_sets}")
            cand = Timed(cand_fn, static, req.warmup, req.outputs, graph_pool)
            t = _phase(f"time[{i}].setup", t)
            # Within twice the task's tolerance: baseline and candidate may each be off the reference by it.
            tols = req.tolerances[i] if i < len(req.tolerances) else None
            tolerances = tols and [None if tol is None else (2 * tol["atol"], 2 * tol["rtol"]) for tol in tols]
            reps = protocol.timed_reps(req.reps, req.rounds, base.call_ms, req.timed_ms_per_config)
            times, how, wrong = time_pair(base, cand, pool, state.flush, reps, req.rounds,
                                          state.reset_l2, expected if tols else None, tolerances)
            t = _phase(f"time[{i}].runs", t)
            if wrong and wrong.startswith("candidate"):
                entry.update(wrong_output=wrong, error=wrong)
                results.append(entry)
                continue
            if wrong:  # the pristine baseline's graph no longer computes what it did when prepared
                raise RuntimeError(wrong)
            # Verify the timed path: the verification inputs (not the last timed ones), poisoned output, one more
            # call made the same way as the timed ones.
            cand.refresh(pool[0])
            cand.poison()
            cand.call()
            _synchronize()
            outs = cand.out
            for out in outs:
                _plain(out)
            _save({protocol.output_key(i, slot.name): out.detach().to("cpu", copy=True)
                   for slot, out in zip(req.outputs, outs)}, req.timed_output_path(i))
            _phase(f"time[{i}].verify", t)
            # For diagnosing timing differences between the two (benchmarks/results/README.md, (a)): where each
            # graph's output lives; both should be the same block of the shared pool.
            entry["output_addresses"] = [base.out_address, cand.out_address]
            entry.update(ok=True, baseline_runs_ms=times["baseline"], candidate_runs_ms=times["candidate"],
                         baseline_outer_runs_ms=times["baseline_outer"], candidate_outer_runs_ms=times["candidate_outer"],
                         baseline_mode=f"{base.mode}; timed by {how}", candidate_mode=f"{cand.mode}; timed by {how}")
        except Exception:  # noqa: BLE001
            entry["error"] = tb(8)
        results.append(entry)
    return {"stage": "time", "ok": True, "error": None, "configs": results,
            "persisting_l2_reset": state.reset_l2 is not None}


def _save(obj, path):
    """torch.save, whole or not at all (written aside, then renamed): the parent compares files as they appear.
    Without the zip CRC (a third of the time of saving a 64 MB output): the parent checks the values themselves.
    Every other process is stopped first (`_stop_others`)."""
    _stop_others()
    torch.save(obj, path + ".part")
    os.replace(path + ".part", path)


def _write(path, obj):
    _stop_others()
    with open(path, "w") as f:
        json.dump(obj, f)


def _phase(name, since):
    """Log the wall time of phase `name` since `since` (monotonic s) and, for a whole phase, this process's CPU time
    so far (user and system, its waited-for children's included: the forked input builders) as ``cpu.NAME``: where
    the host's CPU goes per grading (benchmarks/throughput.py). Diagnosis only: no verdict reads these lines."""
    print(f"[harness] {name} {time.monotonic() - since:.3f} s", flush=True)
    if "[" not in name:  # the whole phases only, not each config's parts of the timing
        cpu = os.times()
        print(f"[harness] cpu.{name} {cpu.user + cpu.system + cpu.children_user + cpu.children_system:.3f} s",
              flush=True)
    return time.monotonic()


def gpu_turn(req, shared=False):
    """Hold the GPU's schedule (`Request.gpu_lock`, gpu_schedule.py) for the block, as `protocol.take_turn` does: a
    turn (exclusive), or `shared` (only where the request asks for quiet turns: else nothing is taken). Waits at most
    `Request.gpu_wait_s`, then runs the block with the lock or without it. Yields the record the result carries,
    ``{"held": bool, "waited_s": float}``; None without a lock file in the request."""
    lock = req.gpu_lock if not shared or getattr(req, "gpu_quiet_turns", False) else None
    return protocol.take_turn(lock, req.gpu_wait_s, shared)


def finish(req, state):
    """Import (and where the backend builds, load) the candidate and run the request's stages on the prepared state
    (see the module docstring). Modes: ``check`` (outputs on every config), ``compile`` (import and one config),
    ``grade`` (check, then timing when a baseline is given), ``time`` (timing only)."""
    t = time.monotonic()
    if req.marked:
        _marker(first=True)  # every kernel after this one ran with the candidate's code loaded
        t = _phase("marker.first", t)
    try:
        sys.path.insert(0, req.directory)  # the candidate may import its own helper files
        fn = load_entry(req, state.backend, req.directory, "kernelgym_candidate", req.build_directory)
        print(IMPORTED_MARKER, flush=True)
        with open(os.path.join(os.path.dirname(req.result), protocol.IMPORTED_FILE), "w") as f:
            f.write("imported\n")
    except Exception:  # noqa: BLE001 - import failure of the candidate = compile gate failure
        _write(req.result, {"stage": "compile", "ok": False, "error": tb(), "configs": []})
        return
    t = _phase("import", t)
    if req.mode != "time":
        res = check(req, fn, state.check_inputs, state.backend, state.warmup_inputs)
        # Neither set is read by the timed runs: their GPU memory goes back to the allocator for them (a matmul
        # grading's check set is about 1.2 GB, held by each of N envs sharing the card).
        state.check_inputs = state.warmup_inputs = ()
        _write(req.result, res)
        t = _phase("check", t)
        if res["stage"] == "compile" or not all(c["ok"] for c in res["configs"]):
            return  # no timing for a kernel that already failed
    if state.timing is not None:
        with gpu_turn(req) as turn:
            timing = run_timing(req, state, fn)
        if turn is not None:
            timing["gpu_turn"] = turn
        _write(req.time_result, timing)
        _phase("time", t)


def main(path, go_fd=None, ready_fd=None, stop_others=False, wait_go=False, wait_request=False):
    """Serve the request at `path`: `prepare`, then (after saying so on `ready_fd` and reading a line on `go_fd`,
    when given; with `wait_go`, after reading ``go`` on stdin) `finish`. With `wait_request` (a process spawned
    before its grading's seed was drawn: torch is imported meanwhile), first wait for ``request`` on stdin: the
    request is written by then.

    Raises:
        protocol.ProtocolError: the request is malformed.
        RuntimeError: it could not be read, or its inputs not built (see `in_forked_child`)."""
    if wait_request and not sys.stdin.readline().startswith("request"):
        return  # the grading it was spawned for was given up
    t = time.monotonic()
    # The seed never enters this process, where the candidate runs later: a forked child reads the request, deletes
    # its file (the parent keeps its own copy) and builds every seeded input, and sends back the request without
    # its seed, and the inputs. Nothing here, freed or not, holds the seed, the request's text or a generator
    # seeded from it.
    # Each input set's builder sends it straight to this process, on a socket of its own: not through the child.
    sets = [_socket_pair() for _ in range(_INPUT_SETS)]
    try:
        children = _fork_each([lambda: _read_request_and_build(path, [theirs for _, theirs in sets])])
        _start_cuda()  # while the child builds the inputs: it was forked first, so it never holds a CUDA context
        answer = _collect(children)[0]
        # The child and its set builders hold the sending ends: a builder that dies unsent is an end of file here.
        for _, theirs in sets:
            theirs.close()
        inputs = {"warmup": [], "verify": []}
        for name, (mine, _) in zip(answer["sets"], sets):
            inputs[name] = _unwrapped(_receive_value(mine), 0)
    finally:
        for mine, theirs in sets:
            mine.close()
            theirs.close()
    _phase("prepare.inputs", t)
    req = protocol.Request.from_json(answer["request"])
    state = prepare(req, inputs)
    inputs = None  # the host copies of the sets now on the device (the verification set is kept in `state`)
    short = baseline_out_of_memory(state)
    if short:
        # No candidate code has run: the card, shared with other envs, failed the baseline, not the kernel. Exiting
        # before the prepared marker, the grading is the machine's to retry (a warm worker's child: a fresh process)
        # or to report as an infrastructure fault, never a grade of the kernel.
        print(f"[harness] the baseline's preparation ran out of GPU memory: {short}", flush=True)
        raise SystemExit(3)
    _phase("prepare", t)
    print(PREPARED_MARKER, flush=True)
    if wait_go:  # an observed run started ahead of its grading: the candidate's files are copied in before "go"
        for name in state.backend.PRELOAD:  # imported now, not after go (triton: about a second)
            importlib.import_module(name)
        if not sys.stdin.readline().startswith("go"):
            return
    if go_fd is not None:
        os.write(ready_fd, b"ready")
        go = os.read(go_fd, 16)
        os.close(go_fd)  # before any candidate code runs
        if not go.startswith(b"go"):
            return  # the worker went away
    _stopping["on"] = stop_others
    finish(req, state)
    if wait_go:
        print(protocol.OBSERVED_FINISHED_MARKER, flush=True)
    if ready_fd is not None:
        # The results are written: the worker may answer now, without waiting for this process's exit (tearing
        # down CUDA takes a few hundred ms). A candidate that writes this early only cuts its own grading short.
        os.write(ready_fd, FINISHED)


def _start_cuda():
    """Start CUDA (its context and the caching allocator) where this harness runs kernels on a GPU, while `main`'s
    forked child builds the inputs, so that neither waits for the other; nothing on Triton's CPU interpreter or
    without a GPU. A failure here is left to `prepare`, which reports it."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return
    try:
        if torch.cuda.is_available():
            torch.empty(1, device="cuda")
    except Exception:  # noqa: BLE001 - prepare's own first use raises it again, where it is reported
        pass


_INPUT_SETS = 3  # check, warmup, verify: `input_set_builds`


def _read_request_and_build(path, ends):
    """In `main`'s forked child: read the request at `path` (deleted once read), and have each input set it needs
    built by a child of its own, which sends it on one of `ends` (in the order of `input_set_builds`). Returns
    ``{"request": the request as JSON, its seed set to 0, "sets": the names of the sets sent, in order}`` once every
    set is sent.

    Raises:
        OSError: the request cannot be read.
        protocol.ProtocolError: it is malformed.
        RuntimeError: a set's process died."""
    try:
        with open(path, "rb") as f:
            text = f.read()
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    req = protocol.Request.from_json(json.loads(text))
    works = input_set_builds(req)
    children = _fork_each(list(works.values()), ends[:len(works)])
    for end in ends:
        end.close()
    for pid, _ in children:
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if code != 0:
            raise RuntimeError(f"the harness's input process died (exit code {code})")
    return {"request": dataclasses.replace(req, seed=0).to_json(), "sets": list(works)}


def _child(path, go_fd, ready_fd, close_fds, stop_others=False):
    """In a forked child of the worker: log to ``harness.log`` beside the request, let go of the worker's pipes
    (before any candidate code runs), serve `path`, and exit."""
    code = 1
    try:
        for fd in close_fds:
            os.close(fd)
        log = os.open(os.path.join(os.path.dirname(path), protocol.HARNESS_LOG), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        main(path, go_fd, ready_fd, stop_others)
        code = 0
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


PF_EXITING = 0x4  # task flag (include/linux/sched.h): the task is in do_exit and runs no more user code


def _running_others(me, keep=()):
    """Pids in this pid namespace, but `me`, pid 1 and `keep`, with a thread that can still run user code (not
    exiting)."""
    running = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in (1, me, *keep):
            continue
        try:
            for tid in os.listdir(f"/proc/{d}/task"):
                with open(f"/proc/{d}/task/{tid}/stat") as f:
                    flags = int(f.read().rsplit(")", 1)[1].split()[6])  # field 9 of proc(5): flags
                if not flags & PF_EXITING:
                    running.append(int(d))
                    break
        except (OSError, ValueError, IndexError):
            pass  # gone meanwhile
    return running


def _kill_others(timeout_s=5.0, keep=()):
    """Kill every process in this pid namespace but this one and pid 1, and wait until none of them can run user
    code any more: whatever the candidate left running could otherwise read the worker's reply through bwrap's
    pid 1 (/proc/1/fd/1), or swallow it. Waits for the kill to take, not for the processes to end: a process
    tearing down its CUDA context (hundreds of ms) is already past user code. Only for a worker alone in its own
    pid namespace (``--kill-others``). With `keep`, those pids are spared too (the worker, seen from its child)."""
    me, deadline = os.getpid(), time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:  # our own exited children: reaped here, the rest by pid 1
                pass
        except ChildProcessError:
            pass
        running = _running_others(me, keep)
        if not running:
            return
        for pid in (running if keep else [-1]):  # -1: every process but the caller and pid 1
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.001)


_stopping = {"on": False}


def _stop_others():
    """Before a result is written: stop every other process of this pid namespace (but the worker that forked this
    one, and pid 1), so a helper the candidate forked cannot rewrite a result once it is written. Only in a pid
    namespace of the grading's own (``--kill-others``)."""
    if _stopping["on"]:
        _kill_others(keep=(os.getppid(),))


def _wait_finished(pid, ready):
    """After "go": wait until the child says it has written its results (`FINISHED` on `ready`) or exits.
    Returns its exit code, or 0 where it said it finished (and may still be tearing down)."""
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            readable, _, _ = select.select([ready, pidfd], [], [])
            if ready in readable and os.read(ready, 64):
                return 0
            if pidfd in readable or ready in readable:  # exited (or closed its end: wait for the exit)
                return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    finally:
        os.close(pidfd)


def serve(kill_others=False, one_run=False):
    """Warm worker: torch and triton imported, CUDA not started. Reads commands from stdin, one per line:

    - ``prepare PATH``: fork a child that runs `prepare` for the request at PATH (CUDA start, inputs, the
      baseline's graphs), then waits;
    - ``run TOKEN PATH``: serve the request at PATH and answer ``done <exit code> TOKEN PATH``. For a prepared
      request, first ``started TOKEN PATH`` once the child is ready, then wait for ``go TOKEN`` on stdin before
      letting it go on: the parent has read that answer before any candidate code runs, and from then on takes
      no ``unprepared``. Where the prepared child died before it was ready (no candidate code ran), the answer
      is ``unprepared <exit code> TOKEN PATH`` instead, which the parent may retry elsewhere. Once a candidate
      has run, its result is final: it cannot earn a second run by killing the worker or deleting its log.
      Without a prepared child, one is forked that does both.

    The answer comes as soon as the child has written its results (it says so on its ready pipe), or exits.
    Each child starts CUDA itself (CUDA does not survive a fork) and logs to ``harness.log`` beside its request.

    With `one_run` (``--one-run``, for a worker that serves one untrusted grading) the worker exits after its
    first answer to ``run``: a candidate can write lines into the worker's stdin through bwrap's pid 1
    (/proc/1/fd/0), and a ``run`` it queued there must not be served (a second run, which could also find the
    parent's token in the forked memory)."""
    import ctypes

    import triton  # noqa: F401 - imported once here, so each grading skips it
    import triton.language  # noqa: F401
    # Not dumpable: a candidate in a child (same uid, capabilities dropped) cannot ptrace the worker or open its
    # /proc/<pid>/mem to change how later requests are served.
    PR_SET_DUMPABLE = 4
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    waiting = {}  # request path -> (pid of its prepared child, write end of its go pipe, read end of its ready pipe)
    for line in sys.stdin:
        command, _, path = line.strip().partition(" ")
        token = None
        if command == "run":
            token, _, path = path.partition(" ")
        if command not in ("prepare", "run") or not path:
            continue
        answer, code = "done", None
        if command == "run" and path in waiting:
            pid, go, ready = waiting.pop(path)
            if os.read(ready, 8) == b"ready":  # blocks until the child has prepared (or died trying)
                os.write(1, f"started {token} {path}\n".encode())
                if sys.stdin.readline().strip() == f"go {token}":
                    try:
                        os.write(go, b"go\n")
                    except OSError:
                        pass
                os.close(go)
                code = _wait_finished(pid, ready)
            else:
                answer = "unprepared"
                os.close(go)
            os.close(ready)
        else:
            go_read, go = os.pipe() if command == "prepare" else (None, None)
            ready, ready_write = os.pipe() if command == "prepare" else (None, None)
            pid = os.fork()
            if pid == 0:
                others = [fd for entry in waiting.values() for fd in entry[1:]] + [fd for fd in (go, ready) if fd]
                _child(path, go_read, ready_write, others, kill_others)
            if command == "prepare":
                os.close(go_read)
                os.close(ready_write)
                waiting[path] = (pid, go, ready)
                continue
        if code is None:
            code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if kill_others:
            _kill_others()
        # One write: a reply split over two writes could be read in halves.
        os.write(1, f"{answer} {code} {token} {path}\n".encode())
        try:  # a child that said it finished may still be exiting (killed above, where allowed): reaped after the answer
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        if one_run and command == "run":
            os._exit(0)  # pid 1 of the sandbox ends it (and with it anything left) once this process is gone


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        serve("--kill-others" in sys.argv, "--one-run" in sys.argv)
    else:
        main(sys.argv[1], stop_others="--kill-others" in sys.argv, wait_go="--wait-go" in sys.argv,
             wait_request="--wait-request" in sys.argv)
