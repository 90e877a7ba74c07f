"""A grade's ``checks``: every defence that acts on a grading (defences.py, scopes `IN_A_GRADE`), each with its result
by name, decided from what ran in that grading (`Evidence`), beside six summary keys readers have used from the start.

A result is one of:

- ``passed`` / ``failed: <why>``: the defence has a verdict of its own and gave it in this grading;
- ``in force``: a guard with no verdict of its own, applied in this grading (it ran, or is unconditional for the
  configuration, e.g. a bubblewrap mount around a candidate's process that started);
- ``off: <why>``: the configuration or the machine switched it off (``sandbox='none'``, no observer, the CPU
  interpreter, no seccomp filter for this architecture);
- ``not run: <why>``: what it guards did not happen in this grading (the candidate's process never started, an
  earlier gate failed, the grading was not timed).

The summary keys (``static_check``, ``dynamic_check``, ``launch_counter``, ``observer``, ``speedup_cross_check``,
``disk``) keep their values as before (`planned`, `disk_check`; observing.py fills the observer's two): outcome.py,
kernelgym/report/ and the tests read them. ``speedup_cross_check`` is also a defence's name and holds one value.

`RESULTS` maps each grading defence's name to its function; tests/test_grade_checks.py fails where a defence of
those scopes has none (or a function names no such defence).
"""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from kernelgym import cgroups, seccomp
from kernelgym.grader import preparing
from kernelgym.grader.defences import DEFENCES, IN_A_GRADE
from kernelgym.grader.files import TreeUsage
from kernelgym.grader.grade import GraderConfig, Stage
from kernelgym.grader.outcome import FAULT_INFRA, FAULT_TIMEOUT
from kernelgym.grader.protocol import CheckResult, TimeResult
from kernelgym.grader.static_check import StaticCheck

if TYPE_CHECKING:  # `Grader` (grader.py) is not imported even here: grader.py imports this module
    from kernelgym.grader.session import GradingSession

    Grader = object

PASSED, IN_FORCE = "passed", "in force"


def planned(grader: Grader, provenance: list[str], static_ran: bool) -> dict[str, str]:
    """The summary keys before the gates run: what will run (``pending``) and why the rest will not."""
    counter = grader.backend.LaunchCounter is not None
    unavailable = grader.observer_unavailable()
    drawn = grader._observe_drawn.get(grader.session.gdir)  # drawn when the grading was prepared, else now
    if unavailable is None and not (drawn if drawn is not None else preparing._draw() < grader.config.observe_fraction):
        unavailable = f"not sampled (observe_fraction={grader.config.observe_fraction:g})"
    if unavailable and grader.config.observer == "required":
        unavailable = "pending"  # `observe` fails the grading, saying why
    observer = unavailable or "pending"
    dynamic = ("pending" if grader._dynamic_check else "off" if not grader.config.dynamic_check
               else "off: the outside observer lists the kernels on this machine")
    static = ("off" if not grader._static_check_on else "failed" if provenance else PASSED if static_ran
              else "not run: the editable files could not be copied")
    return {"static_check": static,
            "dynamic_check": dynamic,
            "launch_counter": "ran in the candidate's process" if counter
            else f"none for {grader.backend.LANGUAGE} kernels",
            "observer": observer,
            "speedup_cross_check": "pending" if observer == "pending" and not grader.hardware.interpreter
            else "not run: no observer"}


def launch_verdict(planned: str, check) -> str:
    """The ``launch_counter`` key once the checked calls ran: ``failed`` naming the configs where none of the
    candidate's own kernels launched (the harness's `ConfigRun.launch_missing`), else ``passed``; `planned` as it was
    where the counter does not run for this language or no config ran."""
    if not planned.startswith("ran") or not check.configs:
        return planned
    missing = [i for i, c in enumerate(check.configs) if c.launch_missing]
    return (f"failed: none of the candidate's own kernels launched on config(s) {', '.join(map(str, missing))}"
            if missing else "passed")


def disk_check(used: TreeUsage, config: GraderConfig) -> str:
    """The ``disk`` key: what the grading directory held once the harness was done, or how it went past a cap."""
    if used.bytes > config.grading_dir_cap_bytes:
        return (f"failed: the candidate's process filled its grading directory past the cap of "
                f"{config.grading_dir_cap_bytes / 2**30:g} GiB")
    if used.unreadable:
        return (f"failed: the candidate's process left {used.unreadable} directories the grader cannot read in its "
                f"grading directory (what they hold cannot be held to the disk cap)")
    if used.entries > config.grading_dir_cap_files:
        return (f"failed: the candidate's process left more than {config.grading_dir_cap_files} files and "
                f"directories in its grading directory (GraderConfig.grading_dir_cap_files)")
    return f"{used.entries} files and directories, {used.bytes / 2**20:.1f} MiB in the grading directory"


@dataclass
class Evidence:
    """What ran in one grading, as `Grader.grade` saw it; every defence's result is a function of this alone."""

    config: GraderConfig
    gpu: bool
    language: str
    launch_counter: bool
    """The backend counts the candidate's kernel launches (Triton)."""
    copy_problems: list[str]
    """Why editable files could not be copied into the grading directory (empty: all were)."""
    static: StaticCheck | None
    """The static check's result; None where it did not run."""
    not_started: str | None
    """Why the candidate's process did not start; None where it did."""
    warm: bool
    """A warm worker's prepared child ran the candidate (else a fresh process, or none)."""
    keep_worker: bool
    fault: str | None
    check: CheckResult
    compared_ok: bool | None
    """The correctness gate's own verdict on the compared outputs; None where it did not run."""
    timed: TimeResult | None
    timed_ok: bool | None
    """The performance gate found the timed path's outputs right; None where it did not run."""
    stages: list[Stage]
    rows: list[dict]
    summary: dict[str, str]
    """The six summary keys, final."""
    used: TreeUsage
    observer_tool: str | None
    traced: bool
    """The checked run was the observed one (`Observing.traces_checked_run`), not a run of its own."""
    seen: bool
    """The configs graded are the task's seen ones (on which the task's tolerances are judged)."""
    reference_process: bool
    """The references were computed in a trusted process of their own (``reference_device: cuda``, where that process
    did not fail: else they were computed in this process)."""
    references_device: str = "cpu"
    """Where the references were held and the outputs compared (`GraderConfig.references_on_gpu`)."""
    seccomp: bool = True
    """bubblewrap got the seccomp filter (one exists for this architecture)."""
    cgroups_off: str | None = None
    root: bool = False
    """kernelgym runs as root (the sandbox then drops to an unprivileged user)."""


RESULTS: dict[str, Callable[[Evidence], str]] = {}
"""Each grading defence's name -> its result in a grading."""


def reports(*names: str):
    """Register the decorated function as the result of the defences `names`."""
    def register(fn: Callable[[Evidence], str]) -> Callable[[Evidence], str]:
        for name in names:
            assert name not in RESULTS, name
            RESULTS[name] = fn
        return fn
    return register


def defence_results(e: Evidence) -> dict[str, str]:
    """Every defence of `IN_A_GRADE` scopes with its result in this grading, in the registry's order."""
    return {d.name: RESULTS[d.name](e) for d in DEFENCES if d.acts_on in IN_A_GRADE}


# -- when a defence's subject did not happen: the reason, else None ---------------------------------------------------
def _started(e: Evidence) -> str | None:
    return None if e.not_started is None else f"not run: {e.not_started}"


def _checked(e: Evidence) -> str | None:
    """The candidate imported and its checked calls ran (the harness's guards on calls and outputs then applied)."""
    return _started(e) or (None if e.check.stage == "check" else "not run: the candidate did not import")


def _bwrap(e: Evidence) -> str | None:
    if e.config.sandbox != "bwrap":
        return "off: sandbox 'none' (GraderConfig.sandbox): the candidate's process runs unisolated"
    return _started(e)


def _static(e: Evidence) -> str | None:
    if e.summary["static_check"] == "off":
        return "off: no static check (GraderConfig.static_check, or the backend's STATIC_CHECK)"
    return None if e.static is not None else "not run: the editable files could not be copied"


def _compared(e: Evidence) -> str | None:
    """Outputs compared with the references by the correctness gate."""
    if e.compared_ok is None:
        return "not run: the compile gate failed"
    return "not run: the static check refused the sources" if e.static and e.static.findings else None


def _timed(e: Evidence) -> str | None:
    """The harness timed baseline and candidate."""
    if not e.gpu:
        return "off: the CPU interpreter is not timed"
    if not e.config.measure:
        return "off: measure=False"
    if e.timed is None:
        return _started(e) or "not run: the check failed before timing"
    return None if e.timed.ok else f"not run: timing failed: {(e.timed.error or '')[-200:]}"


def _perf_gate(e: Evidence) -> str | None:
    """The performance gate judged the timing (correctness passed)."""
    return _timed(e) or (None if e.timed_ok is not None else "not run: correctness failed")


def _observed(e: Evidence) -> str | None:
    """An observed run took place (whatever it found)."""
    state = e.summary["observer"]
    if state in ("passed", "failed") or (state.startswith("failed: ") and not state.startswith("failed: required")):
        return None
    return state if state.startswith("not run") else f"off: no observed run ({state})"


def _apart(e: Evidence) -> str | None:
    """None where a run of its own observed; why not where the checked run was the observed one (traced)."""
    return "off: the checked run was the observed one (traced): no run apart" if e.traced else None


# -- the sandbox (bubblewrap, around the candidate's process) -----------------------------------------------------------
@reports("no_network", "read_only_system", "mount_allowlist", "drop_all_capabilities", "read_only_sysctls",
         "pid1_memory_masked", "pidfd_kill_sandbox_init", "tmpfs_size_cap", "no_descriptor_leak",
         "grading_dir_bound_alone", "stop_others_before_results")
def bwrap_guard(e: Evidence) -> str:
    return _bwrap(e) or IN_FORCE


@reports("seccomp_process_access", "seccomp_socket_families", "seccomp_keyrings", "seccomp_other_abis")
def seccomp_filter(e: Evidence) -> str:
    return _bwrap(e) or (IN_FORCE if e.seccomp else f"off: no seccomp filter for {platform.machine()}")


@reports("unprivileged_sandbox_user")
def sandbox_user(e: Evidence) -> str:
    return _bwrap(e) or (IN_FORCE if e.root else "off: kernelgym is not root: the sandbox runs as its own, "
                                                 "unprivileged user")


# -- the process's limits (either sandbox backend) -----------------------------------------------------------------------
@reports("clean_environment", "process_group_kill")
def process_guard(e: Evidence) -> str:
    return _started(e) or IN_FORCE


@reports("output_head_tail_cut")
def output_cut(e: Evidence) -> str:
    return _started(e) or ("not run: a warm worker's child ran the candidate (its reply and log are read capped)"
                           if e.warm else IN_FORCE)


@reports("address_space_limit")
def address_space(e: Evidence) -> str:
    return _started(e) or ("off: a GPU is passed in (its runtimes reserve more address space than they use)"
                           if e.gpu else IN_FORCE)


@reports("cgroup_pids_limit")
def cgroup_limit(e: Evidence) -> str:
    return _started(e) or (f"off: {e.cgroups_off}" if e.cgroups_off else IN_FORCE)


# -- the static check ----------------------------------------------------------------------------------------------------
@reports("static_provenance_check")
def static_verdict(e: Evidence) -> str:
    if (why := _static(e)) is not None:
        return why
    if e.static.findings:
        return f"failed: {len(e.static.findings)} finding(s), first: {e.static.findings[0][:300]}"
    if e.static.compile_problems:
        return f"not run: {e.static.compile_problems[0][:300]}"
    return PASSED


@reports("source_bytes_judged")
def source_bytes(e: Evidence) -> str:
    if (why := _static(e)) is not None:
        return why
    return f"failed: {e.static.source_errors[0][:300]}" if e.static.source_errors else PASSED


@reports("static_check_sandboxed")
def static_sandboxed(e: Evidence) -> str:
    if (why := _static(e)) is not None:
        return why
    if e.static.error:
        return f"failed: {e.static.error[:300]}"
    return PASSED if e.config.sandbox == "bwrap" else "off: sandbox 'none': the static check ran unsandboxed"


@reports("static_check_depth", "kernel_bodies_checked", "whole_file_judged", "host_values_read_by_allow_list",
         "names_resolved_by_scope", "own_modules_not_importable", "entry_point_fixed", "kernel_attributes_listed",
         "refused_names_as_attributes", "no_process_tricks_in_source", "host_access_refused_in_source")
def static_rule(e: Evidence) -> str:
    """Rules of the static check: applied where it ran; their findings are static_provenance_check's verdict."""
    return _static(e) or IN_FORCE


@reports("linear_source_scans")
def cpp_scans(e: Evidence) -> str:
    if e.language != "cuda":
        return f"off: no C++ sources ({e.language} task)"
    return IN_FORCE if e.static is not None or _observed(e) is None else "not run: no scan of the sources ran"


# -- the grading directory ---------------------------------------------------------------------------------------------
@reports("pristine_task_files", "no_write_through_links")
def grading_dir_guard(e: Evidence) -> str:
    return IN_FORCE  # the grading directory is made from the pristine task, and every parent write is O_EXCL


@reports("no_symlinked_editable_files")
def no_symlinks(e: Evidence) -> str:
    links = [p for p in e.copy_problems if "symlink" in p]
    return f"failed: {links[0]}" if links else PASSED


@reports("editable_file_cap")
def editable_cap(e: Evidence) -> str:
    refused = [p for p in e.copy_problems if "symlink" not in p and "missing in the workspace" not in p]
    return f"failed: {refused[0]}" if refused else PASSED


@reports("sources_read_before_run")
def sources_read(e: Evidence) -> str:
    return IN_FORCE if not e.copy_problems else "not run: the editable files could not be copied"


@reports("untrusted_file_reader", "candidate_text_capped", "input_builder_from_pristine_copy",
         "candidate_in_own_process", "import_recorded_by_file", "seed_out_of_reach", "seed_not_in_candidate_memory")
def harness_guard(e: Evidence) -> str:
    return _started(e) or IN_FORCE


@reports("outputs_own_memory", "plain_tensor_outputs", "no_torch_mode_active", "warmup_on_other_values")
def call_guard(e: Evidence) -> str:
    return _checked(e) or IN_FORCE


@reports("unpacked_size_cap", "weights_only_load", "correctness_in_trusted_parent", "non_finite_never_pass",
         "relative_l2_guard", "shape_and_dtype_match", "dense_real_cpu_tensor_only")
def comparison_guard(e: Evidence) -> str:
    return _compared(e) or IN_FORCE


@reports("outputs_reread_when_replaced")
def reread(e: Evidence) -> str:
    if not e.config.early_compare:
        return "off: early_compare=False (the outputs are read once, after the run)"
    if e.references_device != "cpu":
        return "off: the references are on the GPU (the outputs are read once, after the run)"
    return _compared(e) or IN_FORCE


@reports("every_config_every_element")
def every_config(e: Evidence) -> str:
    if (why := _compared(e)) is not None:
        return why
    if e.compared_ok:
        return PASSED
    wrong = [r for r in e.rows if not r.get("correct")]
    why = str(wrong[0].get("error") or "").strip()[-200:] if wrong else "no config ran"
    return f"failed: {len(wrong)} of {len(e.rows)} configs wrong, first: {why}"


@reports("trivial_output_task_check")
def trivial_output(e: Evidence) -> str:
    if not e.seen:
        return "off: not the task's seen configs (the task's tolerances are judged on those)"
    return _compared(e) or "passed (judged once per process and config)"


@reports("private_reference_scratch_dir")
def reference_scratch(e: Evidence) -> str:
    return IN_FORCE if e.reference_process else "off: the references are computed in this process"


@reports("grading_dir_disk_check")
def disk_bytes(e: Evidence) -> str:
    cap = e.config.grading_dir_cap_bytes
    return e.summary["disk"] if e.used.bytes > cap else PASSED


@reports("grading_dir_file_cap")
def disk_entries(e: Evidence) -> str:
    cap = e.config.grading_dir_cap_files
    return f"failed: more than {cap} files and directories" if e.used.entries > cap else PASSED


# -- the candidate's process -------------------------------------------------------------------------------------------
@reports("harness_timeout")
def timeout(e: Evidence) -> str:
    if e.fault == FAULT_TIMEOUT:
        return f"failed: {e.check.error}"
    return _started(e) or PASSED


@reports("interpreter_compile_errors")
def interpreter_errors(e: Evidence) -> str:
    if e.gpu or e.language != "triton":
        return "off: not a Triton kernel on the CPU interpreter"
    return _started(e) or IN_FORCE


@reports("launch_arguments_checked")
def launch_counter(e: Evidence) -> str:
    return (f"off: no launch counter for {e.language} kernels" if not e.launch_counter else _checked(e) or IN_FORCE)


@reports("triton_launch_required")
def launch_required(e: Evidence) -> str:
    if not e.launch_counter or (why := _checked(e)) is not None:
        return launch_counter(e)
    verdict = e.summary.get("launch_counter", "")
    return verdict if verdict.startswith(("passed", "failed")) else IN_FORCE


@reports("dynamic_torch_op_check")
def dynamic_verdict(e: Evidence) -> str:
    state = e.summary["dynamic_check"]
    if state == "off":
        return "off: GraderConfig.dynamic_check=False"
    if state == "failed":
        bad = [r for r, c in zip(e.rows, e.check.configs) if c.dynamic_check_failed]
        return f"failed: {len(bad)} config(s): {str(bad[0].get('error') or '').strip()[-200:]}" if bad else state
    return state


@reports("dynamic_check_sees_suspension")
def dynamic_guard(e: Evidence) -> str:
    return IN_FORCE if e.summary["dynamic_check"] in ("passed", "failed") else dynamic_verdict(e)


# -- the warm worker ---------------------------------------------------------------------------------------------------
@reports("worker_reply_token", "no_retry_once_started", "bounded_reply_read", "worker_not_dumpable")
def worker_guard(e: Evidence) -> str:
    return _started(e) or (IN_FORCE if e.warm else "not run: a fresh process ran the candidate (no warm worker)")


@reports("kill_others_before_reply")
def worker_kills_others(e: Evidence) -> str:
    return _bwrap(e) or worker_guard(e)


@reports("one_run_per_worker")
def one_run(e: Evidence) -> str:
    if e.warm and e.keep_worker:
        return "off: the worker serves several gradings of trusted code (Grader.keep_worker)"
    return worker_guard(e)


@reports("baseline_kernel_cache_before_candidate")
def kernel_cache(e: Evidence) -> str:
    if not e.gpu or e.language != "triton":
        return "off: no kernel cache is kept (a GPU's Triton cache only)"
    return worker_guard(e)


# -- the outside observer ----------------------------------------------------------------------------------------------
@reports("outside_observer_kernels")
def observer_verdict(e: Evidence) -> str:
    state = e.summary["observer"]  # the summary key's words ('unavailable: ...', why none ran) read as 'off: ...' here
    if state == "failed":  # the observer refused a config: its row says why
        wrong = [str(r.get("error") or "") for r in e.rows if not r.get("correct")]
        return f"failed: {len(wrong)} of {len(e.rows)} configs, first: {wrong[0][-200:] if wrong else '?'}"
    return state if state.startswith(("passed", "failed: ", "not run")) else f"off: {state}"


@reports("speedup_cross_check")
def cross_check(e: Evidence) -> str:
    return e.summary["speedup_cross_check"]


@reports("observer_report_complete", "library_names_not_own", "baseline_key_follows_configs")
def observer_guard(e: Evidence) -> str:
    return _observed(e) or IN_FORCE


@reports("observed_run_reads_sources_first", "early_observer_death_is_infra")
def run_apart_guard(e: Evidence) -> str:
    return _observed(e) or _apart(e) or IN_FORCE


@reports("kernel_trace_complete", "kernel_timestamps_known", "untraced_process_exits")
def tracer_guard(e: Evidence) -> str:
    if (why := _observed(e)) is not None:
        return why
    return IN_FORCE if e.observer_tool == "tracer" else f"off: observed by {e.observer_tool}, not the kernel tracer"


@reports("kernel_artifacts_only", "observed_cache_copy_bounded")
def triton_artifacts(e: Evidence) -> str:
    return (f"off: no Triton cache ({e.language} task)" if e.language != "triton"
            else _observed(e) or _apart(e) or IN_FORCE)


# -- timing --------------------------------------------------------------------------------------------------------------
@reports("timer_bound_before_import", "baseline_prepared_before_import", "fresh_inputs_every_run",
         "output_poisoned_with_nan", "device_wide_sync_eager", "untimed_work_outer_events")
def timing_guard(e: Evidence) -> str:
    return _timed(e) or IN_FORCE


@reports("persisting_l2_reset")
def persisting_l2(e: Evidence) -> str:
    return _timed(e) or (IN_FORCE if e.timed.persisting_l2_reset else
                         "off: unavailable in the candidate's process (cuda-python not importable)")


@reports("every_timed_run_checked")
def timed_runs_checked(e: Evidence) -> str:
    if (why := _timed(e)) is not None:
        return why
    wrong = [t.wrong_output for t in e.timed.configs if t.wrong_output]
    return f"failed: {str(wrong[0])[-200:]}" if wrong else PASSED


def _timed_rows(e: Evidence) -> bool:
    """Every config's timing was validated and summarized by the performance gate."""
    return bool(e.rows) and all(r.get("speedup") is not None for r in e.rows)


@reports("timed_path_verified")
def timed_path(e: Evidence) -> str:
    if (why := _perf_gate(e)) is not None:
        return why
    if not e.timed_ok and not any(t.wrong_output for t in e.timed.configs):
        return f"failed: {e.stages[2].messages[0][-200:]}"
    return PASSED if _timed_rows(e) else f"not run: {e.stages[2].messages[0][-200:]}"


@reports("timing_numbers_validated")
def timing_numbers(e: Evidence) -> str:
    if (why := _perf_gate(e)) is not None:
        return why
    if _timed_rows(e):
        return PASSED
    wrong = not e.timed_ok or any(t.wrong_output for t in e.timed.configs)
    return f"{'not run' if wrong else 'failed'}: {e.stages[2].messages[0][-200:]}"


@reports("roofline_ceiling")
def roofline(e: Evidence) -> str:
    if (why := _perf_gate(e)) is not None:
        return why
    fractions = [max(r.get("bandwidth_fraction") or 0, r.get("flops_fraction") or 0)
                 for r in e.rows if "bandwidth_fraction" in r]
    if not fractions:
        return "off: the task has no roofline" if _timed_rows(e) else "not run: the timing was not validated"
    return f"failed: {max(fractions):.2f}x the hardware's peak" if max(fractions) > 1.0 else PASSED


def grade_checks(grader: Grader, session: GradingSession, *, copy_problems: list[str], static: StaticCheck | None,
                 check: CheckResult, compared_ok: bool | None, timed: TimeResult | None, timed_ok: bool | None,
                 stages: list[Stage], rows: list[dict], summary: dict[str, str], used: TreeUsage) -> dict[str, str]:
    """The grade's ``checks``: the summary keys, then every grading defence's result (`defence_results`)."""
    spec, backend = grader.task.spec, grader.backend
    if copy_problems or static is not None and static.compile_problems:
        not_started = "the editable files were refused (compile failed)"
    elif backend.BUILDS and session.trusted_build is None:
        not_started = "the sources did not build"
    elif session.fault == FAULT_INFRA:
        not_started = "the candidate's process could not start (infrastructure fault)"
    else:
        not_started = None
    gpu = not grader.hardware.interpreter
    e = Evidence(config=grader.config, gpu=gpu, language=spec.language, launch_counter=backend.LaunchCounter is not None,
                 copy_problems=copy_problems, static=static, not_started=not_started,
                 warm=session.prepare_wait_s is not None, keep_worker=grader.keep_worker, fault=session.fault,
                 check=check, compared_ok=compared_ok, timed=timed, timed_ok=timed_ok, stages=stages, rows=rows, summary=summary, used=used,
                 observer_tool=grader._tool, traced=grader.observed_in_checked_run(session),
                 seen=grader.configs == grader.task.configs_for(grader.hardware.interpreter),
                 reference_process=session.references.used_process,
                 references_device=session.references.device,
                 seccomp=seccomp.program() is not None, cgroups_off=cgroups.unavailable_reason(),
                 root=os.geteuid() == 0)
    return {**summary, **defence_results(e)}
