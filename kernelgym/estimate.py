"""What the workspace's ``bench.py`` needs, put there at reset (`install_bench`), and the model it estimates with.

``bench.py`` (kernelgym/workspace_tools/bench.py) runs inside the sandbox, where kernelgym cannot be imported: it
reads everything from the workspace. `install_bench` copies in

- ``.kernelgym/harness.py`` and ``.kernelgym/timing_stats.py``: the grader's own timing code (`Timed`, `time_pair`)
  and statistics (`summarize`, `choose_runs`), so a GPU bench times the way the grader does;
- ``.kernelgym/baseline/``: a pristine, read-only copy of the task's editable files (the original kernel), which
  bench times or counts against;
- ``.kernelgym/bench.json``: the grader's timing settings, the task's roofline formulas and the GPU hardware
  profiles (bandwidth, peak FLOPs, flush size) the CPU estimate and the roofline fractions use.

The CPU estimate is a MODEL, never a measurement (docs/BENCH.md): on Triton's interpreter ``bench.py`` counts the
bytes every kernel loads and stores (masked-off elements excluded) and the programs and launches, and estimates a
kernel's time on a GPU profile as ``max(bytes / peak_bandwidth, flops / peak_flops) + launches x LAUNCH_US``.
It never enters the reward.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from kernelgym.hardware import HardwareProfile, all_profiles
from kernelgym.task import Task

TOOLS = Path(__file__).resolve().parent / "workspace_tools"
GRADER = Path(__file__).resolve().parent / "grader"

#: Model: device time of one kernel launch beyond its memory traffic (µs). Not from the hardware profiles (they hold
#: no such figure): about the smallest kernel time the grader's CUDA-graph timing reads on the H200 (an RMSNorm of
#: 32x128 took 1.4 µs by graph replay, hardware/h200.md); stated, not measured per profile.
LAUNCH_US = 2.0
#: The GPU profile the CPU estimate targets unless ``bench.py --target`` names another.
DEFAULT_TARGET = "h200"
#: What bench times by default on a GPU: the grader's method with fewer runs (the grader: 10 warm-up, 100 runs in
#: 10 rounds, 4 input sets).
BENCH_WARMUP, BENCH_REPS, BENCH_ROUNDS, BENCH_INPUT_SETS = 5, 40, 4, 4


def bench_settings(task: Task, hardware: HardwareProfile, grader=None) -> dict:
    """The contents of ``.kernelgym/bench.json`` for `task` on `hardware`, graded with `grader` (a `GraderConfig`;
    None: the defaults)."""
    from kernelgym.grader import GraderConfig
    from kernelgym.grader.gpu_schedule import scheduled_lock
    from kernelgym.roofline import evaluate
    grader = grader or GraderConfig()
    gpus = {p.id: {"name": p.name, "peak_bandwidth_gbps": p.peak_bandwidth_gbps, "peak_tflops": p.peak_tflops,
                   "flush_bytes": p.flush_bytes}
            for p in all_profiles().values() if not p.interpreter and p.peak_bandwidth_gbps > 0}
    roofline = task.spec.roofline
    per_config = []
    for cfg in task.configs_for(hardware.interpreter):
        try:
            per_config.append({"bytes": evaluate(roofline.bytes, cfg), "flops": evaluate(roofline.flops, cfg)}
                              if roofline is not None else None)
        except ValueError:
            per_config.append(None)
    return {
        "hardware": hardware.id, "interpreter": hardware.interpreter, "flush_bytes": hardware.flush_bytes,
        "peak_bandwidth_gbps": hardware.peak_bandwidth_gbps, "peak_tflops": hardware.peak_tflops,
        "grader": {"warmup": grader.warmup, "reps": grader.reps, "rounds": grader.rounds,
                   "input_sets": grader.input_sets, "timed_ms_per_config": grader.timed_ms_per_config},
        "bench": {"warmup": BENCH_WARMUP, "reps": BENCH_REPS, "rounds": BENCH_ROUNDS, "input_sets": BENCH_INPUT_SETS},
        # The GPU's timing schedule (GraderConfig.gpu_schedule): bench.py's timed runs take turns with the gradings'.
        "gpu_lock": str(lock) if (lock := scheduled_lock(grader, hardware)) else None, "gpu_wait_s": grader.gpu_wait_s,
        "roofline": per_config,
        "model": {"launch_us": LAUNCH_US, "default_target": DEFAULT_TARGET if DEFAULT_TARGET in gpus else
                  next(iter(sorted(gpus)), None), "targets": gpus},
    }


def install_bench(task: Task, workspace: Path, hardware: HardwareProfile, grader=None) -> None:
    """Put ``bench.py`` and what it reads (see the module docstring) into `workspace`, made by `create_workspace`;
    `grader`: the env's `GraderConfig` (its warm-up, runs and rounds are what bench reports as the grader's)."""
    workspace = Path(workspace)
    shutil.copy2(TOOLS / "bench.py", workspace / "bench.py")
    hidden = workspace / ".kernelgym"
    hidden.mkdir(exist_ok=True)
    for name in ("harness.py", "timing_stats.py"):
        shutil.copy2(GRADER / name, hidden / name)
    base = hidden / "baseline"
    for rel in task.spec.editable_files:
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(task.root / rel, base / rel)
        os.chmod(base / rel, 0o444)
    (hidden / "bench.json").write_text(json.dumps(bench_settings(task, hardware, grader), indent=1))
