"""kernelgym's timing helpers for reference-format runners. Everything below the HELPERS line is copied, as text,
into the block between ``# >>> AKA-GENERATED`` and ``# <<< AKA-GENERATED`` of a task's files (placeholder.py), so it
imports nothing from kernelgym and needs no ``from __future__`` import (it lands mid-file).

On a GPU: warm-up calls, then CUDA-graph replay of enough calls per graph to last about `target_ms` (launch overhead
amortized), each of `repetition` replays timed with CUDA events; where capture fails (the function synchronizes,
allocates on the host, ...), each call is timed with CUDA events instead, the L2 cache flushed before each. The time
of one call is the interquartile mean of the samples (as kernelgym's own grader reports). Without CUDA (the CPU
interpreter) nothing is timed: the function runs once (so a broken kernel still fails) and the time is NaN, with
``benchmark_method: "not_timed"`` saying why.
"""
# --- HELPERS (copied into runners) ---
import math as _kg_math


def _kg_interquartile_mean(samples):
    xs = sorted(samples)
    q = len(xs) // 4
    core = xs[q:len(xs) - q] or xs
    return sum(core) / len(core)


def _kg_not_timed_reason():
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA/ROCm device (CPU interpreter): kernelgym times only on a GPU"
    return None


def _measure_cuda_event_fallback(fn, repetition=100, flush_l2=True):
    """Time `repetition` calls of `fn` one by one with CUDA events, L2 flushed before each; returns ms per call
    (a list of floats). Without a GPU: runs `fn` once and returns NaNs (not timed)."""
    if _kg_not_timed_reason() is not None:
        fn()
        return [float("nan")] * max(int(repetition), 1)
    import torch
    flush = None
    if flush_l2:
        l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0) or (64 << 20)
        flush = torch.empty(2 * l2 // 4 + 1, dtype=torch.int32, device="cuda")
    pairs = []
    for _ in range(max(int(repetition), 1)):
        if flush is not None:
            flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in pairs]


def _benchmark_cuda_graph_or_events(fn, warmup=10, repetition=100, target_ms=1.0, max_repeats=1000,
                                    use_cuda_graph=True, **_unused):
    """Time one call of `fn`: returns (elapsed_ms, metadata). See the module docstring for the method; metadata
    names it (``benchmark_method``: cuda_graph, cuda_event_fallback or not_timed) and its counts."""
    meta = {"benchmark_warmup": int(warmup), "benchmark_samples": int(repetition), "benchmark_target_ms": target_ms,
            "benchmark_max_repeats": int(max_repeats), "benchmark_timer": "kernelgym"}
    reason = _kg_not_timed_reason()
    if reason is not None:
        fn()
        return float("nan"), {**meta, "benchmark_method": "not_timed", "benchmark_not_timed_reason": reason}
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as graph capture needs
        for _ in range(max(int(warmup), 1)):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end), 1e-4)
    inner = int(min(max(_kg_math.ceil(target_ms / estimate_ms), 1), max(int(max_repeats), 1)))
    fallback = "cuda_graph_disabled" if not use_cuda_graph else None
    if use_cuda_graph:
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(inner):
                    fn()
            graph.replay()
            torch.cuda.synchronize()
            pairs = []
            for _ in range(max(int(repetition), 1)):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                graph.replay()
                e.record()
                pairs.append((s, e))
            torch.cuda.synchronize()
            samples = [s.elapsed_time(e) / inner for s, e in pairs]
            return _kg_interquartile_mean(samples), {**meta, "benchmark_method": "cuda_graph",
                                                     "benchmark_effective_repeats": inner,
                                                     "benchmark_l2_flush": False}
        except Exception as exc:  # noqa: BLE001 - any capture failure falls back to per-call events
            fallback = f"{type(exc).__name__}: {exc}"[:300]
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                pass
    samples = _measure_cuda_event_fallback(fn, repetition)
    return _kg_interquartile_mean(samples), {**meta, "benchmark_method": "cuda_event_fallback",
                                             "benchmark_fallback_reason": fallback, "benchmark_effective_repeats": 1,
                                             "benchmark_l2_flush": True}
