"""What a grading is asked to do and what it gives back: `GraderConfig` (how grading runs), `Stage` (one gate) and
`Grade` (the whole grade, `info["grade"]`). Plain data; the gates that fill them are in gates.py, their composition in
grader.py's `Grader.grade`."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

NOT_MEASURED_ON_INTERPRETER = "not measured on the CPU interpreter (Triton interpreter timings mean nothing)"


@dataclass
class GraderConfig:
    """How grading runs. Defaults follow the arena protocol (10 warm-up, 100 timed runs)."""

    warmup: int = 10
    """Untimed calls before timing, per config."""
    reps: int = 100
    """Timed calls per kernel and config; their interquartile mean is reported (timing_stats.py)."""
    rounds: int = 10
    """Rounds in which baseline and candidate alternate; the spread of per-round speedups is the noise band."""
    timed_ms_per_config: float = 100.0
    """Where a config's baseline runs long, fewer timed runs: about this many ms of the baseline's timed runs per
    config, in whole rounds of at least 2 runs each (`protocol.timed_reps`; a matmul of 2-3 ms gets 40 runs, a kernel
    of a few µs all `reps`). 0: always `reps`."""
    input_sets: int = 4
    """Distinct input value sets copied in before each timed run, in turn."""
    timeout_s: float | None = None
    """Limit for one harness process (check and time, or the observed run), s. None: derived from the task
    (`Grader.timeout_s`: a compile budget plus a budget per config, at least `TIMEOUT_FLOOR_S`), so a hung kernel
    fails within minutes, not a fixed quarter of an hour."""
    sandbox: str = "bwrap"
    """Sandbox backend for the candidate: 'bwrap' or 'none' (explicit opt-out)."""
    measure: bool = True
    """Run the performance stage (False: correctness only, e.g. the original kernel on unseen configs)."""
    warm_worker: bool = True
    """Start a warm grading worker at reset and prepare the episode's grading in it while the agent works (CUDA
    start, inputs, the baseline's graphs, the references; see worker.py): submit-to-reward then pays only for
    running the candidate. False: each grading starts a fresh sandboxed process."""
    static_check: bool = True
    """Refuse candidates whose Python computes with PyTorch on the entry point's path, or imports the reference
    (provenance.py): a config counts only where the candidate's own kernels did the work."""
    static_check_timeout_s: float = 60.0
    """Wall-clock limit of the static check's sandboxed process, s (a 4 MiB file, the editable-file cap, takes about
    10 s on 2 cores: benchmarks/results/README.md); past it the submission fails compile, saying so."""
    dynamic_check: bool = True
    """Where no outside observer runs (the CPU interpreter, AMD GPUs, `observer` 'off'): the harness records every
    PyTorch operator each checked call runs, in a dispatch mode of its own, and fails a config where one computes
    (anything but allocation, views, copies and fills, `protocol.ALLOWED_TORCH_OPS`, and the task's
    `allowed_torch_ops`). Where the observer runs, its kernel list does this job."""
    early_compare: bool = True
    """Compare the candidate's outputs with the references as the harness writes them, while it still runs (the
    verdicts are the same: every file is checked again once no candidate code runs; tests/test_fast_path.py)."""
    observer: str = "auto"
    """The outside observer (observer.py): the check runs once more under a kernel tracer or profiler that lists every
    kernel of each checked call; a kernel that is not the candidate's own fails that config, and a speedup the
    kernels' device times do not support earns nothing. 'auto': on NVIDIA GPUs where a tool is found (the grade says
    when none was); 'required': a grading it cannot observe fails; 'off'."""
    observer_tool: str = "auto"
    """What observes: 'tracer' (the CUPTI kernel tracer, tracer.py: a few microseconds per kernel; needs a C++
    compiler and CUPTI), 'ncu' (Nsight Compute: profiles one kernel at a time, about 70-100 ms each on the H200), or
    'auto' (the tracer where it builds, else ncu)."""
    observe_fraction: float = 1.0
    """Fraction of gradings observed, drawn at random per grading (below 1 for RL throughput where the observed run
    costs a process of its own: under ncu, or with `observe_in_checked_run` off); each grade's ``checks`` says
    whether its grading was observed."""
    observe_in_checked_run: bool = True
    """Under the kernel tracer with every grading observed (`observe_fraction` 1): the candidate's own checked run is
    the observed one (its checked calls traced, its timed runs after them untraced), so no second process imports,
    prepares and runs the kernel (observing.py). On by default since the H100 measured it
    (benchmarks/results/README.md, 2026-12-07: rmsnorm 3742 gradings an hour at 8 envs against 2241 for the tree
    before, with a run of its own; 27 of 28 observed gradings of the 24 Triton baselines within 220 +- 1%, every
    observer verdict passed). False: a run of its own observes, as under ncu."""
    observer_margin: float = 0.25
    """How far (a fraction) a measured speedup more than `observer.NOISE` above 1 may exceed the profiler's ratio of
    device times."""
    grading_dir_cap_bytes: int = 16 << 30
    """Disk space a grading directory may take: the candidate's process writes there (its outputs, for big tasks a
    few GB). Checked once the harness is done, not a quota: a grade whose directory took more says so in its
    `checks` (``disk``) and fails correctness."""
    grading_dir_cap_files: int = 100_000
    """Files, directories and links a grading directory may hold once the harness is done (a grading makes a few
    dozen; a Triton cache or a build a few hundred more): past it the grade fails correctness, saying so in `checks`
    (``disk``), as for `grading_dir_cap_bytes`. An empty file costs an inode and no byte."""
    harness_cpu_threads: int = 4
    """CPU threads of each harness process on a GPU (``OMP_NUM_THREADS``): its CPU work (loading inputs, saving
    outputs) is small beside its GPU work, and N envs on one host run 2-3 such processes each."""
    references_on_gpu: bool = True
    """On a GPU, compute the references and compare the candidate's outputs on it, in the env's own trusted process
    (the task's input builder still draws on the CPU): on the CPU a grading's references and comparisons cost 8-11
    CPU-seconds (rmsnorm's 5 configs, two seeds), the host's bottleneck with 8 envs; on the GPU 2.4. They then run
    before the candidate and after it, never while it is timed (no early comparisons). Falls back to the CPU in a
    process forked after CUDA started there (CUDA cannot start again in it), and per reference or comparison where
    the GPU fails it (out of memory). On by default since the H200 measured it (benchmarks/results/README.md,
    2026-12-04: rmsnorm 2128 gradings an hour at 8 envs against 1553, every Triton baseline 220 +- 1%). False: on
    the CPU, or, for ``reference_device: cuda`` tasks, in a trusted GPU process of their own."""
    gpu_schedule: bool = False
    """Take turns on the GPU with every other grading on this host (env processes, vector-env workers, Ray actors):
    a grading's timed runs, and an observed run's checked calls, hold the GPU's lock (gpu_schedule.py), so no two
    gradings time at once; everything else overlaps. Off by default: on the H200 (2026-12-04) it lowered rmsnorm's
    gradings an hour at 8 envs from 2128 to 1687 and did not lower the noise (both 0.1-0.2% median)."""
    gpu_quiet_turns: bool = False
    """With `gpu_schedule`: other gradings' trusted work on the GPU waits while a turn is held, so a turn finds the
    GPU quieter: the harness's preparation (inputs moved, the baseline's warm-up and graphs) and the env processes'
    references and comparisons hold the schedule's shared side (a waiting turn goes first). For the speedup
    cross-check, whose baseline device times are traced with the GPU to itself: under load, other envs' work beside
    a grading's traced calls slows its kernels there and withholds honest speedups. Candidate code (imports, warm-up
    calls, the checked calls of unobserved runs) holds no part of the schedule: it could hold it past its time. A
    candidate that holds the lock or its gate past its turn (both are bound read-only into its sandbox) delays each
    of the other gradings' shared sections (about 14 a grading) by up to `gpu_wait_s`, until its process ends; shared
    work that waited in vain runs beside the turn, unrecorded. Off by default: not yet measured
    (benchmarks/results/README.md)."""
    gpu_wait_s: float = 60.0
    """The longest a timed or observed run waits for its turn on the GPU, s; past it, it runs without the lock and
    the grade says so (a candidate that holds the lock delays the others by at most this)."""
    keep_grading_dirs: bool = False
    """Keep each grading directory whole after its grade is read (for debugging a grading: the candidate's outputs
    and whatever it wrote there). By default only the harness's log and result files stay (`prune_grading_dir`)."""


@dataclass
class Stage:
    """One gate: `passed` is None when the stage did not run (an earlier gate failed) or was not measured."""

    name: str
    passed: bool | None
    messages: list[str] = field(default_factory=list)


@dataclass
class Grade:
    """The whole grade of one kernel; `to_dict()` goes into `info["grade"]`.

    `configs` holds one dict per seen config: config, correct, max_abs_err, error, and where measured
    baseline_ms, candidate_ms (interquartile means of the timed runs, ms), speedup and noise_band. `speedup` is the arithmetic mean of per-config
    ratios (as the arena reports); `speedup_geomean` the geometric mean.
    """

    task: str
    hardware: str
    interpreter: bool
    stages: list[Stage]
    configs: list[dict[str, Any]]
    speedup: float | None
    speedup_geomean: float | None
    score: float
    elapsed_s: float
    """Submit to grade, s (with a prepared worker: the candidate's part only)."""
    phases_s: dict[str, float] = field(default_factory=dict)
    """Where `elapsed_s` went, s: ``copy_and_static_check`` (the editable files copied, the static check),
    ``wait_for_observer`` (the observer's background work: the baseline's observation, the run ahead's start),
    ``harness`` (the candidate's process: import, check, timing; of which ``harness_prepare_wait``, with a warm
    worker, waited for its prepared child), ``compare`` (the parent's checks of its outputs against the reference)
    and, where it ran, ``observer`` (the observed run)."""
    outcome: str = ""
    """The grading's one typed outcome, a key of `outcome.OUTCOMES` (decided by `outcome.decide`)."""
    checks: dict[str, str] = field(default_factory=dict)
    """What ran on this grading and how it ended: six summary keys (``static_check``, ``dynamic_check``,
    ``launch_counter``, ``observer``, ``speedup_cross_check``: ``passed``, ``failed``, ``off`` or why it did not run;
    ``disk``: what the grading directory held), then every defence that acts on a grading (defences.py,
    `IN_A_GRADE`) by name: ``passed``, ``failed: <why>``, ``in force``, ``off: <why>`` or ``not run: <why>``
    (checks.py decides each)."""

    @property
    def compiled(self) -> bool:
        return bool(self.stages[0].passed)

    @property
    def correct(self) -> bool:
        return bool(self.stages[1].passed)

    def to_dict(self) -> dict[str, Any]:
        """The grade as plain JSON-serializable data (what `info["grade"]` holds)."""
        return {**asdict(self), "compiled": self.compiled, "correct": self.correct}

    def summary(self) -> str:
        """A readable report, as the final observation shows it."""
        lines = [f"Grade for {self.task} on {self.hardware}: score {self.score:.1f}"]
        for st in self.stages:
            mark = {True: "PASS", False: "FAIL", None: "----"}[st.passed]
            lines.append(f"[{mark}] {st.name}")
            lines += [f"    {m}" for m in st.messages]
        for c in self.configs:
            t = (f" baseline {c['baseline_ms']:.4f} ms, candidate {c['candidate_ms']:.4f} ms, "
                 f"speedup {c['speedup']:.3f}x" if c.get("speedup") is not None else "")
            lines.append(f"    {c['config']}: {'correct' if c.get('correct') else 'WRONG'}{t}")
        return "\n".join(lines)

