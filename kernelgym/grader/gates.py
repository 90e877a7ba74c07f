"""The three gates, each a function of what the harness reported and what the parent computed: compile, correctness
(outputs compared here, in the trusted parent, with the references) and performance (speedups computed here from the
per-run times). Each returns a `Stage`; `Grader.grade` composes them, with the observer's verdict, into the grade."""
from __future__ import annotations

import statistics

from kernelgym.grader.grade import NOT_MEASURED_ON_INTERPRETER, GraderConfig, Stage
from kernelgym.grader.protocol import CheckResult, TimeResult
from kernelgym.grader.session import GradingSession
from kernelgym.grader.timing_stats import TimingError, choose_runs, summarize
from kernelgym.hardware import HardwareProfile
from kernelgym.roofline import achieved, evaluate
from kernelgym.task import Roofline

#: Config dtype names (torch's) to the keys of a hardware profile's `peak_tflops`.
PEAK_KEY = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}



def compile_gate(problems: list[str], check: CheckResult, session: GradingSession,
                 provenance: list[str] | None = None) -> Stage:
    """Compile gate: the files are in place, the sources build (compiled languages), the module imports, and
    (Triton) every kernel compiles at its first call. Where the static check refused the sources (`provenance`:
    they may write files, the harness's record of the import among them) and the process died without a result,
    the import is not taken as done."""
    if problems:
        return Stage("compile", False, problems)
    if check.stage == "compile":
        return Stage("compile", False, [check.error or "the candidate did not import"])
    if provenance and not session.result_written:
        return Stage("compile", False, ["the process died without a result, and the static check refused the "
                                        "sources (they may have forged the harness's record of the import)",
                                        check.error or ""])
    return Stage("compile", True, [*session.build_notes, "module imported and kernels compiled",
                                   *session.launch_notes])


def correctness_gate(session: GradingSession, check: CheckResult, configs: list[dict], provenance: list[str],
                     provenance_note: str) -> tuple[Stage, list[dict]]:
    """Correctness gate: every config's outputs, as the harness saved them, compared here with the reference;
    no config counts where the static provenance check found PyTorch doing the work (`provenance`). `provenance_note`
    says which provenance checks ran (`Grader.provenance_note`)."""
    if provenance:
        rows = [{"config": cfg, "correct": False, "max_abs_err": None,
                 "error": "provenance: the output may be computed by PyTorch, not the candidate's kernels"}
                for cfg in configs]
        return Stage("correctness", False, ["provenance: the candidate's own kernels must do the work; on the "
                                            "entry point's path:", *provenance[:20], provenance_note]), rows
    rows, messages = [], []
    if check.error:
        messages.append(check.error)
    for i, cfg in enumerate(configs):
        row = {"config": cfg, "correct": False, "max_abs_err": None, "error": None}
        ran = check.configs[i] if i < len(check.configs) else None
        if ran is None:
            row["error"] = "not run (the process ended early)"
        elif not ran.ok:
            row["error"] = ran.error
        else:
            ok, msg, err = session.compared(*session.checked_outputs()[i])
            row.update(correct=ok, max_abs_err=err, error=None if ok else msg)
        if row["error"]:
            lines = str(row["error"]).strip().splitlines() or [""]
            messages.append(f"{cfg}: {lines[-1]}")
        rows.append(row)
    passed = bool(rows) and all(r["correct"] for r in rows)
    if passed:
        messages.insert(0, f"all {len(rows)} configs within tolerance")
    messages.append(provenance_note)
    if check.gpu_turn is not None:  # the traced checked calls' turn: their device times feed the speedup cross-check
        messages.append(gpu_turn_message(check.gpu_turn, "traced checked calls"))
    return Stage("correctness", passed, messages), rows


def performance_gate(session: GradingSession, rows: list[dict], res: TimeResult | None, config: GraderConfig,
                     hardware: HardwareProfile, roofline: Roofline | None) -> tuple[Stage, list[float] | None, bool]:
    """Performance: baseline and candidate timed in one process, interleaved in rounds (harness.py);
    speedup = baseline time / candidate time per config, each the interquartile mean of its runs
    (timing_stats.py). The timed path's outputs are compared with the reference too.

    Returns (stage, per-config speedups or None, timed outputs correct). Speedup is withheld when a
    config's achieved bandwidth or FLOP rate is above the hardware profile's peak (a measurement error).
    """
    if hardware.interpreter:
        return Stage("performance", None, [NOT_MEASURED_ON_INTERPRETER]), None, True
    if not config.measure:
        return Stage("performance", None, ["not measured (measure=False)"]), None, True
    if res is None or not res.ok:
        return Stage("performance", False, [res.error if res else "timing failed"]), None, True
    speedups, messages, flagged = [], [], False
    for i, (row, t) in enumerate(zip(rows, res.configs)):
        cfg = row["config"]
        if t.wrong_output:  # a timed run's output differed from the baseline's on the same inputs
            row.update(correct=False, error=f"output of the timed path is wrong: {t.wrong_output}")
            return Stage("performance", False, [f"{cfg}: output of the timed path is wrong: {t.wrong_output}"]), None, False
        try:  # reported by the candidate's process: checked and summarized here
            if not t.ok:
                raise TimingError(t.error or "timing failed")
            base_runs, cand_runs, note = choose_runs({
                "baseline_runs_ms": t.baseline_runs_ms, "candidate_runs_ms": t.candidate_runs_ms,
                "baseline_outer_runs_ms": t.baseline_outer_runs_ms or None,
                "candidate_outer_runs_ms": t.candidate_outer_runs_ms or None})
            stats = summarize(base_runs, cand_runs, config.rounds)
        except (TimingError, ArithmeticError) as e:  # numbers from the candidate's process: anything may come
            return Stage("performance", False, [f"{cfg}: timing failed: {e}"]), None, True
        if note:
            messages.append(f"{cfg}: {note}")
        ok, msg, _ = session.compared(*session.timed_outputs()[i])
        if not ok:
            # Blocks kernels that are honest while checked and cheap while timed.
            row.update(correct=False, error=f"output of the timed path is wrong: {msg}")
            return Stage("performance", False, [f"{cfg}: output of the timed path is wrong: {msg}"]), None, False
        row.update(stats, timing_mode=note or t.candidate_mode, baseline_timing_mode=note or t.baseline_mode)
        flagged |= above_peak(cfg, row, messages, hardware, roofline)
        speedups.append(row["speedup"])
    mean = statistics.fmean(speedups)
    counts = sorted({len(t.baseline_runs_ms) for t in res.configs})
    full = max(config.reps // config.rounds, 1) * config.rounds  # what the harness runs without the budget
    runs = (f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}") + " timed runs each" + (
        "" if counts[0] >= full else f" (fewer than {full} where {full} of the baseline's would take over "
                                     f"{config.timed_ms_per_config:g} ms)")
    messages.insert(0, f"speedup {mean:.3f}x (arithmetic mean of {len(speedups)} configs), baseline and "
                       f"candidate interleaved in {config.rounds} rounds, {config.warmup} warm-up + "
                       f"{runs}, caches flushed before every run"
                       + ("" if res.persisting_l2_reset else "; persisting-L2 reset unavailable"))
    if res.gpu_turn is not None:
        messages.insert(1, gpu_turn_message(res.gpu_turn, "timed"))
    return Stage("performance", not flagged, messages), (None if flagged else speedups), True


def gpu_turn_message(turn, what: str) -> str:
    """What a harness's turn on the GPU's schedule (gpu_schedule.py) was, as its process reported it, for a stage's
    messages: `what` (``timed``, ``traced checked calls``) holding the lock after waiting, or without it (the lock
    could not be opened, or was not free within the wait limit). The lock orders gradings only: an agent's own
    commands on the GPU (bench, profile, shell) do not take it."""
    if turn.error:
        return f"GPU schedule: {what} without a turn: the lock could not be taken ({turn.error})"
    if turn.held:
        return (f"GPU schedule: {what} holding the GPU's lock, as the harness reported (waited {turn.waited_s:.2f} s "
                f"for its turn; other gradings wait for it, an agent's own commands do not)")
    return (f"GPU schedule: {what} without a turn: the lock was not free after {turn.waited_s:.1f} s "
            f"(GraderConfig.gpu_wait_s), so other gradings' kernels may have run meanwhile")


def above_peak(cfg: dict, row: dict, messages: list[str], hardware: HardwareProfile, roofline: Roofline | None) -> bool:
    """Add the roofline numbers to `row`; True (with a message) where the achieved bandwidth or FLOP rate is
    above the hardware's peak: a measurement error, which earns no speedup."""
    roof = roofline
    if not roof:
        return False
    gbps, tflops = achieved(evaluate(roof.bytes, cfg), evaluate(roof.flops, cfg), row["candidate_ms"])
    peaks = hardware.peak_tflops
    peak_tflops = peaks.get(PEAK_KEY.get(cfg.get("dtype"), cfg.get("dtype")), 0) or max(peaks.values(), default=0)
    row.update(achieved_gbps=gbps, achieved_tflops=tflops, bandwidth_fraction=gbps / hardware.peak_bandwidth_gbps,
               flops_fraction=tflops / peak_tflops if peak_tflops else None)
    flagged = False
    if row["bandwidth_fraction"] > 1.0:
        flagged = True
        messages.append(f"{cfg}: {gbps:.0f} GB/s is above the {hardware.name} peak "
                        f"({hardware.peak_bandwidth_gbps:.0f} GB/s): measurement error, no speedup")
    if (row["flops_fraction"] or 0) > 1.0:
        flagged = True
        messages.append(f"{cfg}: {tflops:.1f} TFLOP/s is above the {hardware.name} peak "
                        f"({peak_tflops:.1f} TFLOP/s): measurement error, no speedup")
    return flagged
