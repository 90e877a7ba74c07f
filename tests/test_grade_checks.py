"""A grade's ``checks`` (kernelgym/grader/checks.py): every defence that acts on a grading (defences.py, scopes
`IN_A_GRADE`) reports its result by name, decided from what ran in that grading, beside the six summary keys. On the
CPU interpreter (bwrap), and on a GPU profile whose harness 'ran' (the fake_grader fixture)."""
import platform
import re

import pytest

from kernelgym.grader import Grader, GraderConfig, checks
from kernelgym.grader.defences import DEFENCES, IN_A_GRADE, SCOPES
from kernelgym.hardware import detect_profile
from kernelgym.seccomp import program

from tests.test_grader import BASELINE, TASK

SUMMARY = ("static_check", "dynamic_check", "launch_counter", "observer", "speedup_cross_check", "disk")
IN_GRADE = [d.name for d in DEFENCES if d.acts_on in IN_A_GRADE]
BY_SCOPE = {s: [d.name for d in DEFENCES if d.acts_on == s] for s in SCOPES}
STATE = re.compile(r"passed|in force|(failed|off|not run): .+|passed \(.+\)")
TIMING = ["timer_bound_before_import", "baseline_prepared_before_import", "fresh_inputs_every_run",
          "output_poisoned_with_nan", "device_wide_sync_eager", "untimed_work_outer_events", "every_timed_run_checked",
          "timed_path_verified", "timing_numbers_validated", "persisting_l2_reset", "roofline_ceiling"]
WORKER = ["worker_reply_token", "no_retry_once_started", "one_run_per_worker", "kill_others_before_reply",
          "bounded_reply_read", "worker_not_dumpable"]
COMPARISON = ["unpacked_size_cap", "weights_only_load", "correctness_in_trusted_parent", "non_finite_never_pass",
              "relative_l2_guard", "shape_and_dtype_match", "dense_real_cpu_tensor_only", "every_config_every_element"]


def _defences(grade) -> dict[str, str]:
    """The grade's defence results (its checks less the summary keys), each of the documented forms."""
    got = {k: v for k, v in grade.checks.items() if k in IN_GRADE}
    for name, state in got.items():
        assert name == "speedup_cross_check" or STATE.fullmatch(state), f"{name}: {state!r}"
    return got


def test_every_grading_defence_has_a_result_function():
    """Fails when a defence of a grading scope is added to the registry without checks.py reporting it (or a
    function names a defence that is gone, or acts elsewhere)."""
    missing = sorted(set(IN_GRADE) - set(checks.RESULTS))
    extra = sorted(set(checks.RESULTS) - set(IN_GRADE))
    assert not missing, f"kernelgym/grader/checks.py: no result for {missing} (add one with @reports)"
    assert not extra, f"kernelgym/grader/checks.py: {extra} are no grading defences of defences.py"
    assert len(IN_GRADE) > 80 and set(BY_SCOPE["sandbox"]) and set(BY_SCOPE["process"])


def test_a_defence_added_without_a_result_breaks_the_grade(monkeypatch):
    new = DEFENCES[0].__class__("brand_new_guard", "x", "y", "kernelgym.grader.grader", "tests/attacks/x.py", "ci",
                                "grading")
    monkeypatch.setattr(checks, "DEFENCES", (new,))
    with pytest.raises(KeyError, match="brand_new_guard"):
        checks.defence_results(None)


def test_the_baseline_lists_every_grading_defence(grade):
    g = grade(BASELINE)
    assert g.score == 120.0
    got = _defences(g)
    assert list(g.checks)[:6] == list(SUMMARY)
    assert set(got) == set(IN_GRADE) and not set(BY_SCOPE["agent_cli"]) & set(g.checks)
    assert not set(BY_SCOPE["env"]) & set(g.checks) and "unseen_coverage_reported" not in g.checks
    seccomp = "in force" if program() else f"off: no seccomp filter for {platform.machine()}"
    expected = {
        "no_network": "in force", "mount_allowlist": "in force", "drop_all_capabilities": "in force",
        "seccomp_process_access": seccomp, "clean_environment": "in force", "process_group_kill": "in force",
        "static_provenance_check": "passed", "source_bytes_judged": "passed", "static_check_sandboxed": "passed",
        "whole_file_judged": "in force", "no_symlinked_editable_files": "passed", "editable_file_cap": "passed",
        "harness_timeout": "passed", "every_config_every_element": "passed", "dynamic_torch_op_check": "passed",
        "dynamic_check_sees_suspension": "in force", "triton_launch_required": "passed",
        "interpreter_compile_errors": "in force", "grading_dir_disk_check": "passed", "grading_dir_file_cap": "passed",
        "linear_source_scans": "off: no C++ sources (triton task)",
        "address_space_limit": "in force",  # no GPU passed in
        "baseline_kernel_cache_before_candidate": "off: no kernel cache is kept (a GPU's Triton cache only)",
        **{n: "in force" for n in COMPARISON[:-1]},
        **{n: "not run: a fresh process ran the candidate (no warm worker)" for n in WORKER},
        **{n: "off: the CPU interpreter is not timed" for n in TIMING},
    }
    assert {k: got[k] for k in expected} == expected
    assert got["outside_observer_kernels"].startswith("off: ") and got["kernel_trace_complete"].startswith("off: ")
    assert got["trivial_output_task_check"].startswith("passed")
    assert g.checks["static_check"] == "passed" and g.checks["dynamic_check"] == "passed"  # summary keys as before


def test_a_warm_workers_grading_reports_its_guards(tmp_path, require_bwrap, make_workspace):
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "warm")
    grader.start_worker(seed=3)
    got = _defences(grader.grade(make_workspace(), seed=3))
    assert {got[n] for n in WORKER} == {"in force"}
    assert got["output_head_tail_cut"].startswith("not run: a warm worker's child")


def test_sandbox_none_shows_the_sandbox_defences_off(grade):
    with pytest.warns(UserWarning, match="sandboxing is OFF"):
        g = grade(BASELINE, config=GraderConfig(sandbox="none", warm_worker=False))
    got = _defences(g)
    assert g.score == 120.0
    for name in BY_SCOPE["sandbox"] + ["grading_dir_bound_alone", "stop_others_before_results"]:
        assert got[name].startswith("off: sandbox 'none'"), (name, got[name])
    assert got["static_check_sandboxed"] == "off: sandbox 'none': the static check ran unsandboxed"
    assert got["clean_environment"] == got["process_group_kill"] == "in force"  # either backend applies them


def test_a_refused_kernel_shows_static_check_failed(grade):
    torch_path = (BASELINE + "\n\ndef rmsnorm(x, w, eps=1e-6):\n    import torch\n"
                  "    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w\n")
    g = grade(torch_path)
    got = _defences(g)
    assert g.score == 20.0 and g.checks["static_check"] == "failed"
    assert got["static_provenance_check"].startswith("failed: ") and "kernel.py" in got["static_provenance_check"]
    assert got["source_bytes_judged"] == "passed"
    # The harness still ran (both provenance verdicts are reported), but nothing was compared.
    assert got["candidate_in_own_process"] == "in force"
    assert {got[n] for n in COMPARISON} == {"not run: the static check refused the sources"}


def test_a_symlinked_kernel_file_fails_its_defence_and_starts_nothing(tmp_path, require_bwrap, make_workspace):
    ws = make_workspace()
    secret = tmp_path / "secret.py"
    secret.write_text(BASELINE)
    (ws / "kernel.py").unlink()
    (ws / "kernel.py").symlink_to(secret)
    g = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading").grade(ws, seed=7)
    got = _defences(g)
    assert g.score == 0.0 and got["no_symlinked_editable_files"].startswith("failed: kernel.py")
    assert got["editable_file_cap"] == "passed"
    assert got["static_provenance_check"] == g.checks["static_check"] == (
        "not run: the editable files could not be copied")
    assert got["no_network"] == got["candidate_in_own_process"] == (
        "not run: the editable files were refused (compile failed)")
    assert got["every_config_every_element"] == "not run: the compile gate failed"


def test_timing_defences_on_a_gpu_profile(fake_grader, tmp_path):
    times = [(1.0, 0.5)] * len(fake_grader.configs)
    g = fake_grader(times).grade(fake_grader.task.root, seed=1)
    got = _defences(g)
    assert g.correct and g.speedup is not None
    assert {got[n] for n in TIMING[:6]} == {"in force"}
    assert got["every_timed_run_checked"] == got["timed_path_verified"] == got["timing_numbers_validated"] == "passed"
    assert got["roofline_ceiling"] == "passed" and got["persisting_l2_reset"] == "in force"
    assert got["address_space_limit"].startswith("off: a GPU is passed in")

    wrong = fake_grader(times, wrong_timed=True, work="wrong").grade(fake_grader.task.root, seed=1)
    got = _defences(wrong)
    assert not wrong.correct and got["timed_path_verified"].startswith("failed: ")
    assert got["every_timed_run_checked"] == "passed"  # the harness's own per-run check saw nothing wrong
    assert got["every_config_every_element"] == "passed"  # the checked outputs were right


def test_a_kernel_that_does_not_import_ran_no_call_guards(grade):
    g = grade(BASELINE.replace("import triton\n", "import triton\nraise ImportError('no kernel today')\n", 1))
    got = _defences(g)
    assert g.score == 0.0 and not g.compiled
    assert got["candidate_in_own_process"] == got["import_recorded_by_file"] == "in force"
    assert got["outputs_own_memory"] == got["triton_launch_required"] == "not run: the candidate did not import"
    assert got["every_config_every_element"] == "not run: the compile gate failed"


OWN = ("rmsnorm_kernel", 4000.0)


def test_an_observed_grading_reports_the_observers_defences(fake_grader, observed_grader, observation):
    n = len(fake_grader.configs)
    g = observed_grader([(0.1, 0.05)] * n, observation([[("rmsnorm_kernel", 2000.0)]] * n), observation([[OWN]] * n))
    g._tool = "tracer"  # what observer_tool() found (the fixture observes without asking it)
    got = _defences(g.grade(g.task.root, seed=1))
    assert got["outside_observer_kernels"] == got["speedup_cross_check"] == "passed"
    assert {got[n] for n in ("observer_report_complete", "library_names_not_own", "observed_run_reads_sources_first",
                             "kernel_trace_complete", "kernel_timestamps_known", "kernel_artifacts_only")} == {"in force"}
    assert got["dynamic_torch_op_check"] == "off: the outside observer lists the kernels on this machine"

    g = observed_grader([(0.1, 0.05)] * n, observation([[OWN, ("at::native::reduce_kernel", 900.0)]] * n),
                        observation([[OWN]] * n), work="foreign")
    g._tool = "ncu"
    got = _defences(g.grade(g.task.root, seed=1))
    assert got["outside_observer_kernels"].startswith(f"failed: {n} of {n} configs, first: provenance: kernels that are not")
    assert "reduce_kernel" in got["outside_observer_kernels"] and got["observer_report_complete"] == "in force"
    assert got["kernel_trace_complete"] == "off: observed by ncu, not the kernel tracer"
    assert got["every_config_every_element"] == "passed"  # the checked outputs were right; the observer refused them


def test_a_kernel_past_the_limit_fails_harness_timeout(grade):
    hang = BASELINE.replace("import triton\n", "import triton\nimport time\ntime.sleep(60)\n", 1)
    got = _defences(grade(hang, config=GraderConfig(timeout_s=6.0, warm_worker=False)))
    assert got["harness_timeout"].startswith("failed: the candidate ran past the 6 s limit"), got["harness_timeout"]
    assert got["no_network"] == "in force"  # the candidate's process did start, in the sandbox


def test_a_sandbox_that_cannot_start_ran_none_of_its_guards(grade, monkeypatch):
    from pathlib import Path
    real = Grader._readonly
    # bubblewrap refuses to start on a bind source that does not exist (as tests/test_outcome.py does).
    monkeypatch.setattr(Grader, "_readonly", lambda self: [*real(self), Path("/nonexistent/kernelgym-infra-test")])
    g = grade(BASELINE, config=GraderConfig(warm_worker=False))
    got = _defences(g)
    assert g.outcome == "infra_fault"
    assert got["no_network"] == got["harness_timeout"] == (
        "not run: the candidate's process could not start (infrastructure fault)")
    assert got["static_provenance_check"] == "passed"  # the static check ran before, in a sandbox of its own
