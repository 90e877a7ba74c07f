"""Gradings per hour through the env: N envs in N processes, each looping reset -> submit of the untouched baseline
for a fixed time (the issue-24 measure: what an RL loop that grades every episode gets from one machine).

    python benchmarks/throughput.py --task triton-rmsnorm --envs 1,8 --seconds 120 --out throughput.json

Each process makes one env (with its share of the CPU cores as torch's threads: cores / N, as one runs N envs on a
host; the default GraderConfig, the observer as configured by default) and resets it as an RL loop's autoreset does:
with a seed (0) the first time, with reset() after that; `--prepare-ahead` has each later episode's grading prepared
while the one before is graded (the env's prepare_ahead; the seeds are the same either way). It records, per
episode, the reset and submit wall times (s), the reward, and the CPU seconds of the env's own process. The result
per N: gradings, wall seconds, gradings per hour, first and later per-grading times, submit-to-reward median and p95,
the GPU's and the host CPU's busy fractions (nvidia-smi, /proc/stat), the most GPU memory in use at once, the host's
and the env processes' CPU seconds per grading, and the host's by kind of process (/proc: harness.py, bwrap, ...), the
median of each grading phase (the grade's `phases_s`, and the checked and observed runs' own logged
phases), and the rewards seen; and, since each grading times the untouched baseline against itself, the noise:
median and p95 of |speedup - 1|. On the CPU interpreter nothing is timed (rewards 120): there it checks the plumbing
only.
"""
from __future__ import annotations

import argparse
import collections
import inspect
import json
import multiprocessing as mp
import os
import re
import subprocess
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


PHASE_LINE = re.compile(r"\[harness\] (\S+) ([0-9.]+) s")


def _log_phases(text: str) -> dict[str, float]:
    """The ``[harness] NAME S s`` lines of a harness log (the candidate's process writes it: diagnosis only)."""
    return {m[1]: float(m[2]) for m in PHASE_LINE.finditer(text or "")}


def _grading_detail(env) -> dict:
    """Where one grading's time went: the grade's phases, the checked and observed runs' own logged phases."""
    from kernelgym.grader.protocol import HARNESS_LOG

    grade, session = env.grade, getattr(env.grader, "session", None)
    detail = {"phases_s": {k: round(v, 3) for k, v in (grade.phases_s if grade else {}).items()}}
    if session is not None:
        try:
            detail["checked_run_s"] = _log_phases((session.gdir / HARNESS_LOG).read_text(errors="replace"))
        except OSError:
            pass
        detail["observed_run_s"] = _log_phases(session.observer_log)
        detail["observer_ahead"] = session.observer_ahead
        # The trusted side's CPU work: the references (computed in this process from the session's start) and the
        # comparisons (spent, and when the last one ended, from the grading's start).
        detail["references_s"] = session.references.computed_s
        detail["compare_spent_s"] = round(sum(c[2] for c in session.compare_log), 3)
        detail["compare_done_s"] = round(max((c[3] for c in session.compare_log), default=0.0), 3)
        detail["references_device"] = session.references.device
    if grade is not None:
        detail["speedup"] = grade.speedup
        # The verdicts a baseline can fail beside other envs whole (their reason follows the colon: out of GPU
        # memory, say), the others by their first word.
        whole = ("observer", "speedup_cross_check", "timing_numbers_validated", "timed_path_verified",
                 "every_config_every_element", "launch_counter")
        detail["checks"] = {k: v[:400] if k in whole else v.split(":")[0] for k, v in grade.checks.items()}
        detail["gpu_turns"] = [m for st in grade.stages for m in st.messages if m.startswith("GPU schedule:")]
        # Why a grading fell short of the full score: its typed outcome and the first failed gate's messages.
        detail["outcome"] = grade.outcome
        failed = next((st for st in grade.stages if st.passed is False), None)
        if failed is not None:
            detail["failed_gate"] = {"name": failed.name, "messages": [m[:400] for m in failed.messages[:4]]}
    return detail


def _worker(task: str, seconds: float, run_dir: str, queue, threads: int, grader_kwargs: dict,
            prepare_ahead: bool | None) -> None:
    import torch

    import kernelgym  # noqa: F401 - registers the envs
    from kernelgym.env import KernelArenaEnv

    # As one runs N envs in N processes on one host: each process's CPU threads (the references, computed here on
    # the CPU) are its share of the cores, not all of them.
    torch.set_num_threads(threads)

    rows = []
    from kernelgym.grader import GraderConfig
    # Only where asked: an older tree's env lacks the argument.
    env = KernelArenaEnv(task, run_dir=run_dir, max_steps=2, grader=GraderConfig(**grader_kwargs),
                         **({} if prepare_ahead is None else {"prepare_ahead": prepare_ahead}))
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            t0, cpu0 = time.monotonic(), os.times()
            env.reset(seed=None if rows else 0)  # the autoreset's reset() after the first
            t1 = time.monotonic()
            _, reward, *_ = env.step({"kind": "submit"})
            cpu1 = os.times()
            # CPU seconds of this env's own process (references, comparisons, the trusted side); the sandboxed
            # processes are not its waited-for children (bwrap's pid 1 reaps them), so the host's share is measured
            # from /proc/stat instead (`measure`).
            cpu = {"cpu_parent_s": cpu1.user + cpu1.system - cpu0.user - cpu0.system}
            rows.append({"reset_s": t1 - t0, "submit_s": time.monotonic() - t1, "reward": reward, **cpu,
                         "done_at_s": time.monotonic() - (deadline - seconds), **_grading_detail(env)})
    except Exception as e:  # reported, never hidden: a benchmark that fails says where
        rows.append({"error": f"{type(e).__name__}: {e}"})
    finally:
        env.close()
    queue.put(rows)


def _steady_rate(per_env: list[list[dict]]) -> int | None:
    """Gradings an hour once every env has finished its first (cold caches, the first CUDA start, autotuning): the
    gradings finished after the last env's first one, over the time from then to the last finished; None where
    none finished after it."""
    firsts = [rows[0]["done_at_s"] for rows in per_env if rows and "error" not in rows[0]]
    if len(firsts) < len(per_env):
        return None
    warm_at = max(firsts)
    later = [r["done_at_s"] for rows in per_env for r in rows if "error" not in r and r["done_at_s"] > warm_at]
    return round(len(later) * 3600 / (max(later) - warm_at)) if later else None


def _q(values: list[float], q: float) -> float | None:
    """The `q` quantile of `values` (nearest rank), rounded; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


def _noise(speedups: list[float | None]) -> dict:
    """The untouched baseline graded against itself: median and p95 of |speedup - 1| over the gradings that timed."""
    dev = [abs(x - 1) for x in speedups if x is not None]
    return {"timed_gradings": len(dev), "noise_median": _q(dev, 0.5), "noise_p95": _q(dev, 0.95)}


def _medians(dicts: list[dict]) -> dict[str, float]:
    """Per key, the median of the values the dicts hold for it."""
    keys = sorted({k for d in dicts for k in d})
    return {k: round(statistics.median([d[k] for d in dicts if k in d]), 3) for k in keys}


class _GpuSampler:
    """The GPU's busy fraction over a window, from ``nvidia-smi``'s utilization samples (every 200 ms): the share
    of time a kernel ran on the GPU; and the most GPU memory in use at once, GiB, of the card's total (how near N
    envs come to running it out of memory). None where nvidia-smi is absent (the CPU interpreter)."""

    def __init__(self):
        try:
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu,memory.used,memory.total",
                                          "--format=csv,noheader,nounits", "-lms", "200", "-i", "0"],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self.proc = None

    def stop(self) -> tuple[float | None, float | None, float | None]:
        """(busy fraction, peak memory used GiB, memory total GiB), each None where there was no sample."""
        if self.proc is None:
            return None, None, None
        self.proc.terminate()
        out, _ = self.proc.communicate()
        return _gpu_samples(out)


def _gpu_samples(out: str) -> tuple[float | None, float | None, float | None]:
    """`_GpuSampler.stop`'s numbers from nvidia-smi's lines (``utilization %, memory used MiB, memory total MiB``)."""
    rows = []
    for line in out.splitlines():
        try:
            rows.append([float(x) for x in line.split(",")][:3])
        except ValueError:
            continue  # a partial last line, or "[N/A]"
    rows = [r for r in rows if len(r) == 3]
    if not rows:
        return None, None, None
    return (round(statistics.fmean(r[0] for r in rows) / 100, 3), round(max(r[1] for r in rows) / 1024, 1),
            round(rows[0][2] / 1024, 1))


class _ProcessCpuSampler:
    """The host's CPU seconds over a window per kind of process, from every process's ``/proc/PID/stat`` (user +
    system ticks) read every `interval_s`: a process is counted from its first sighting (or its value at the start)
    to its last, so a short-lived one loses up to `interval_s` of its time. Kinds (`_process_kind`): a Python
    script's or module's name (``harness.py``, ``throughput.py``: the env processes are forks of it), else the
    command's name (``bwrap``, ``setpriv``, ``nvidia-smi``, ``kworker``). Diagnosis: where the host CPU per grading
    goes beyond the harness's own and the env processes' (the rest is in no process: interrupts, and what the
    sampling lost)."""

    def __init__(self, interval_s: float = 0.25):
        self.interval_s, self.last, self.kinds = interval_s, {}, {}
        self.tick_s = 1 / os.sysconf("SC_CLK_TCK")
        self._stop = threading.Event()
        self._sample()
        self.first = dict(self.last)  # the processes running at the start count from here
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue  # gone
            fields = stat[stat.rfind(")") + 2:].split()  # after the command's name, which may hold spaces
            key = (entry.name, fields[19])  # pid and start time: a reused pid is another process
            self.last[key] = int(fields[11]) + int(fields[12])
            if key not in self.kinds:
                self.kinds[key] = _process_kind(entry.path, stat[stat.find("(") + 1:stat.rfind(")")])

    def stop(self) -> dict[str, float]:
        """CPU seconds per kind of process over the window, largest first."""
        self._stop.set()
        self._thread.join()
        self._sample()
        by_kind: dict[str, float] = {}
        for key, ticks in self.last.items():
            kind = self.kinds[key]
            by_kind[kind] = by_kind.get(kind, 0.0) + (ticks - self.first.get(key, 0)) * self.tick_s
        return dict(sorted(((k, round(v, 2)) for k, v in by_kind.items() if v > 0), key=lambda kv: -kv[1]))


def _process_kind(proc_dir: str, comm: str) -> str:
    """`_ProcessCpuSampler`'s kind of the process at `proc_dir` (``/proc/PID``) whose command name is `comm`."""
    try:
        argv = [a.decode(errors="replace") for a in Path(proc_dir, "cmdline").read_bytes().split(b"\0")]
    except OSError:
        argv = []
    if comm.startswith("python"):
        for i, arg in enumerate(argv[1:], start=1):
            if arg == "-m" and i + 1 < len(argv):
                return argv[i + 1]
            if arg.endswith(".py"):
                return Path(arg).name
    return comm.split("/")[0]


def _cpu_ticks() -> tuple[int, int] | None:
    """(busy, total) jiffies of all the host's cores since boot, from /proc/stat; None where it is absent."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _cpu_busy(before: tuple[int, int] | None) -> float | None:
    """The host's CPU busy fraction (all cores) since `before` (`_cpu_ticks`): near 1, the gradings wait on the CPU."""
    after = _cpu_ticks()
    if before is None or after is None or after[1] == before[1]:
        return None
    return round((after[0] - before[0]) / (after[1] - before[1]), 3)


def measure(task: str, n_envs: int, seconds: float, run_root: Path, harness_threads: int = 4,
            gpu_schedule: bool = False, references_on_gpu: bool = True, observe_in_checked_run: bool | None = None,
            prepare_ahead: bool | None = None, quiet_turns: bool = False) -> dict:
    """N envs in N processes for `seconds`; gradings that finished in the window count. `gpu_schedule`:
    `GraderConfig.gpu_schedule` (the envs take turns on the GPU for their timed and observed runs);
    `references_on_gpu`: `GraderConfig.references_on_gpu`; `observe_in_checked_run`: the same setting (None: the
    tree's default; passed only where set: an older tree's GraderConfig lacks it); `prepare_ahead`: the env's (None:
    its default; passed only where set); `quiet_turns`: `GraderConfig.gpu_quiet_turns` (with the schedule)."""
    grader_kwargs = {"harness_cpu_threads": harness_threads, **({"gpu_schedule": True} if gpu_schedule else {}),
                     **({"gpu_quiet_turns": True} if quiet_turns else {}),
                     "references_on_gpu": references_on_gpu,
                     **({} if observe_in_checked_run is None else {"observe_in_checked_run": observe_in_checked_run})}
    from kernelgym.env import KernelArenaEnv
    from kernelgym.grader import GraderConfig
    # Recorded as the envs will have them (this tree's defaults where not set; False where the tree lacks a setting).
    observe_in_checked_run = getattr(GraderConfig(**grader_kwargs), "observe_in_checked_run", False)
    env_default = inspect.signature(KernelArenaEnv).parameters.get("prepare_ahead")
    effective_prepare_ahead = prepare_ahead if prepare_ahead is not None else bool(env_default and env_default.default)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    sampler, processes = _GpuSampler(), _ProcessCpuSampler()
    cpu_before = _cpu_ticks()
    start = time.monotonic()
    procs = [ctx.Process(target=_worker, args=(task, seconds, str(run_root / f"{task}-n{n_envs}-{i}"), queue,
                                                    max(1, (os.cpu_count() or 1) // n_envs), grader_kwargs,
                                                    prepare_ahead))
             for i in range(n_envs)]
    for p in procs:
        p.start()
    per_env = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    wall_s = time.monotonic() - start
    busy, gpu_memory_peak_gib, gpu_memory_total_gib = sampler.stop()
    by_kind = processes.stop()
    cpu_busy = _cpu_busy(cpu_before)
    rows = [r for env_rows in per_env for r in env_rows if "error" not in r]
    errors = [r["error"] for env_rows in per_env for r in env_rows if "error" in r]
    firsts = [env_rows[0]["reset_s"] + env_rows[0]["submit_s"] for env_rows in per_env
              if env_rows and "error" not in env_rows[0]]
    later_rows = [r for env_rows in per_env for r in env_rows[1:] if "error" not in r]
    later = [r["reset_s"] + r["submit_s"] for r in later_rows]
    sub = [r["submit_s"] for r in later_rows]
    return {"task": task, "envs": n_envs, "harness_cpu_threads": harness_threads, "gpu_schedule": gpu_schedule,
            "gpu_quiet_turns": quiet_turns,
            "references_on_gpu": references_on_gpu, "observe_in_checked_run": observe_in_checked_run,
            "prepare_ahead": effective_prepare_ahead,
            "window_s": seconds, "wall_s": round(wall_s, 1), "gradings": len(rows),
            "gradings_per_hour": round(len(rows) * 3600 / wall_s),
            "steady_gradings_per_hour": _steady_rate(per_env),
            "first_grading_s": [round(x, 2) for x in firsts],
            "later_grading_s_median": round(statistics.median(later), 2) if later else None,
            "submit_s_median": _q(sub, 0.5), "submit_s_p95": _q(sub, 0.95),
            "gpu_busy_fraction": busy, "gpu_memory_peak_gib": gpu_memory_peak_gib,
            "gpu_memory_total_gib": gpu_memory_total_gib, "cpu_busy_fraction": cpu_busy,
            "host_cpu_s_per_grading": round(cpu_busy * (os.cpu_count() or 1) * wall_s / len(rows), 2)
            if rows and cpu_busy is not None else None,
            "env_process_cpu_s_per_grading": round(statistics.fmean([r["cpu_parent_s"] for r in rows]), 2)
            if rows else None,
            "host_cpu_s_per_grading_by_process": {k: round(v / len(rows), 2) for k, v in by_kind.items()}
            if rows else None, **_noise([r.get("speedup") for r in rows]), "phases_s_median": _medians([r["phases_s"] for r in later_rows]),
            "checked_run_s_median": _medians([r.get("checked_run_s", {}) for r in later_rows]),
            "observed_run_s_median": _medians([r.get("observed_run_s", {}) for r in later_rows]),
            "trusted_side_s_median": _medians([{k: r[k] for k in ("references_s", "compare_spent_s", "compare_done_s")
                                                if r.get(k) is not None} for r in later_rows]),
            "observer_ahead": sorted({str(r.get("observer_ahead")).split(":")[0] for r in rows}),
            "rewards": sorted({round(r["reward"], 1) for r in rows}),
            "outcomes": dict(collections.Counter(str(r.get("outcome")) for r in rows)),
            "errors": errors, "gradings_detail": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="triton-rmsnorm", help="comma-separated task names")
    ap.add_argument("--envs", default="1,8", help="comma-separated numbers of parallel envs")
    ap.add_argument("--seconds", type=float, default=120.0, help="the window each N runs for")
    ap.add_argument("--run-dir", default="/tmp/kg-throughput")
    ap.add_argument("--harness-threads", type=int, default=4, help="GraderConfig.harness_cpu_threads")
    ap.add_argument("--gpu-schedule", action="store_true", help="GraderConfig.gpu_schedule: take turns on the GPU")
    ap.add_argument("--gpu-quiet-turns", action="store_true",
                    help="GraderConfig.gpu_quiet_turns (implies --gpu-schedule): other gradings' GPU work waits "
                         "while a turn is held")
    ap.add_argument("--references-on-gpu", action=argparse.BooleanOptionalAction, default=True,
                    help="GraderConfig.references_on_gpu: references and comparisons on the GPU (the default)")
    ap.add_argument("--observe-in-checked-run", action=argparse.BooleanOptionalAction, default=None,
                    help="GraderConfig.observe_in_checked_run: under the tracer the checked run is the observed one "
                         "(default: the tree's own default)")
    ap.add_argument("--prepare-ahead", action=argparse.BooleanOptionalAction, default=None,
                    help="the env's prepare_ahead: each later grading prepared while the last is graded "
                         "(default: the env's own default)")
    ap.add_argument("--out", default="throughput.json")
    args = ap.parse_args()
    results = []
    for task, n in [(t, int(x)) for t in args.task.split(",") for x in args.envs.split(",")]:
        result = measure(task, n, args.seconds, Path(args.run_dir), args.harness_threads,
                         args.gpu_schedule or args.gpu_quiet_turns, args.references_on_gpu,
                         args.observe_in_checked_run, args.prepare_ahead, args.gpu_quiet_turns)
        print(json.dumps({k: v for k, v in result.items() if k != "gradings_detail"}), flush=True)
        results.append(result)
        Path(args.out).write_text(json.dumps({"machine": os.uname().nodename, "date": time.strftime("%Y-%m-%d"),
                                              "results": results}, indent=1))


if __name__ == "__main__":
    main()
