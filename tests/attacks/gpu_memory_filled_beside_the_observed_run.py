"""Attack: fill the GPU's memory from another env while this grading's observed run prepares (8 envs share a GPU in
RL training), so that the observed run dies of CUDA out of memory before it imports the candidate: the kernel would
then be graded unobserved, or an honest one refused as if the observer had caught it. On the 80 GB H100 (2026-12-07)
8 matmul envs did this to each other without trying: 6 observed runs died so, and untouched baselines scored 20.

Defence: `early_observer_death_is_infra`: an observed run that dies before its `PREPARED_MARKER` ran no candidate code
(`ObserverError.before_candidate`, `Observing._read_observation`), so the grading is an infrastructure fault scoring
0 (a trainer retries or drops it): no pass unobserved, no refusal charged to the kernel.
Honest twin: a run that died after it prepared is the kernel's (refused, 20), as before.
No GPU here: the fresh observed run is a stand-in sandbox that exits 1 with the out-of-memory message.
"""
import dataclasses
import pytest

N = 5  # the configs of conftest.fake_grader
OWN = ("rmsnorm_kernel", 4000.0)


@pytest.mark.parametrize("prepared", [False, True])
def test_an_observed_run_that_dies_before_any_candidate_code_is_an_infra_fault(fake_grader, observation, monkeypatch,
                                                                               prepared):
    """A fresh observed run that dies before it says it prepared (CUDA out of memory beside other envs, as on the
    80 GB H100 with 8 matmul envs) ran no candidate code: the machine failed, so the grading is an infrastructure
    fault scoring 0, never the kernel's provenance failure (20) nor a pass unobserved. Once it had prepared, a death
    is the kernel's: refused, as before."""
    from types import SimpleNamespace

    from kernelgym.grader.protocol import PREPARED_MARKER
    same = observation([[OWN]] * N)
    g = fake_grader([(0.05, 0.05)] * N)
    g._tool = "tracer"
    monkeypatch.setattr(g, "observer_unavailable", lambda: None)
    # An observed run of its own (under ncu, sampled, or observe_in_checked_run off): a traced checked run has none.
    g.config = dataclasses.replace(g.config, observe_in_checked_run=False)
    monkeypatch.setattr(g, "baseline_observation", lambda: same)
    output = (PREPARED_MARKER + "\n" if prepared else "") + "torch.OutOfMemoryError: CUDA out of memory.\n"

    class Sandbox:
        def run(self, argv, limits=None):
            return SimpleNamespace(timed_out=False, returncode=1, output=output)
    monkeypatch.setattr(g, "_observer_command", lambda *a, **k: (Sandbox(), ["observed"]))
    grade = g.grade(g.task.root, seed=1)
    if prepared:
        assert grade.outcome == "provenance_refused" and grade.score == 20.0
        assert grade.checks["observer"].startswith("failed: the observed run left no result")
    else:
        assert grade.outcome == "infra_fault" and grade.score == 0.0
        assert grade.checks["observer"].startswith("failed: the observed run died before any candidate code ran")


@pytest.mark.parametrize("prepared, output, infra", [
    (False, "torch.OutOfMemoryError: CUDA out of memory.\n", True),   # a fresh run that died preparing
    (True, "flood\n" * 400, False),   # a run ahead seen prepared before go, whose last lines the candidate filled
])
def test_only_a_run_not_seen_prepared_is_the_machines_fault(fake_grader, tmp_path, prepared, output, infra):
    """A run started ahead keeps only its last lines: a candidate that floods them after "go" and then crashes must
    not pass for a run that died preparing. Such a run was seen prepared before "go" (`_prepared`), which decides."""
    from kernelgym.grader.observer import ObserverError
    g = fake_grader([(0.05, 0.05)] * N)
    with pytest.raises(ObserverError) as e:
        g._read_observation(tmp_path, False, 1, output, prepared=prepared)
    assert e.value.before_candidate is infra
