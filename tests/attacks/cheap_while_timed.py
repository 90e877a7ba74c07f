"""Attack: honest while checked, cheap while timed. The kernel recognizes the verification inputs (the values the
static timing buffers hold at its first call, or by counting its calls) and computes only there; in the other timed
runs it writes nothing, or less. Its checked call and the verification call after timing are right; most timed
runs are not.

Defences: `every_timed_run_checked` (in every block of timed runs one run, drawn at random, has its output compared
with the baseline's output on the same inputs, for both kernels alike) and `timed_path_verified` (after timing, one
more call made the way the timed ones were, on the verification inputs with a poisoned output, is compared with the
reference by the parent).
Honest twin: a candidate whose graph writes its output to another block than the baseline's is not mistaken for a
broken baseline (last test); honest kernels pass every per-run check (tests/test_time_pair.py).
GPU twin: benchmarks/attacks.py, ``fingerprint`` (benchmarks/kernels/attack_fingerprint.py), on the H200.
"""
import pytest

from kernelgym.grader import harness


@pytest.mark.parametrize("inner", [True, False])
def test_a_kernel_that_computes_only_on_the_verification_inputs_is_caught_in_its_timed_runs(sim_device, inner):
    # It recognizes the verification set (by its values, or by counting calls) and skips the work elsewhere.
    dev = sim_device
    base, cand = dev.kernel("baseline", inner), dev.kernel("candidate", inner, honest_on=("verify",))
    # One run a round is checked, at a random position: it lands on the verification set (the one the kernel gets
    # right) with odds 1/4, so 10 rounds miss the attack once in 4^10 tries (4 rounds did once in 256).
    _, _, wrong = harness.time_pair(base, cand, dev.POOL, flush=None, reps=40, rounds=10, reset_l2=None,
                                    expected=dev.expected(), tolerances=[(1e-3, 1e-3)])
    assert wrong is not None and wrong.startswith("candidate's timed run"), wrong


def test_one_random_run_per_block_of_each_kernel_is_checked(sim_device, monkeypatch):
    # The same checks for both kernels (the work between runs stays alike), at positions drawn per block: a kernel
    # that counts its calls cannot know which run is checked.
    dev = sim_device
    cand = dev.kernel("candidate", True)
    base = dev.kernel("baseline", True, block=cand.out[0])
    base.out = None  # as prepared: the baseline's graph released its output tensor (it writes the candidate's block)
    checked = []
    monkeypatch.setattr(harness, "_wrong_output",
                        lambda out, exp, tol, who, run, used: checked.append((who, run)) if out is cand.out else "?")
    harness.time_pair(base, cand, dev.POOL, flush=None, reps=100, rounds=10, reset_l2=None, expected=dev.expected(),
                      tolerances=[(0.0, 0.0)])
    for who in ("baseline", "candidate"):
        runs = [run for w, run in checked if w == who]
        assert len(runs) == 10 and all(10 * b < run <= 10 * (b + 1) for b, run in enumerate(runs)), runs
    positions = {run % 10 for _, run in checked}
    assert len(positions) > 1  # not always the same run of the block


def test_wrong_output_on_the_timed_path_fails_correctness(fake_grader):
    # The verification call after timing (the timed path) returned zeros: correctness fails, no speedup.
    grade = fake_grader([(0.05, 0.01)] * 5, wrong_timed=True).grade(fake_grader.task.root, seed=3)
    assert not grade.correct and grade.score == 20.0
    assert "timed path is wrong" in "\n".join(grade.stages[2].messages)


def test_a_wrong_timed_run_fails_correctness(fake_grader):
    # The harness checks every timed run of the candidate against the baseline's output on the same inputs.
    extra = {"wrong_output": "timed run 7 (input set 2): the output differs from the baseline's"}
    grade = fake_grader([(0.05, 0.01)] * 5, extra=extra).grade(fake_grader.task.root, seed=3)
    assert not grade.correct and grade.score == 20.0 and grade.speedup is None
    assert "timed run 7" in "\n".join(grade.stages[2].messages)


def test_a_candidate_graph_writing_its_output_elsewhere_is_not_mistaken_for_a_broken_baseline(sim_device):
    # The baseline's graph released its output tensor; where the candidate's graph writes another block, the
    # baseline's block cannot be read, and its check must not fail the timing (the honest candidate is fine).
    dev = sim_device
    cand = dev.kernel("candidate", True)
    base = dev.kernel("baseline", True)  # its own block
    base.out = None
    _, _, wrong = harness.time_pair(base, cand, dev.POOL, flush=None, reps=100, rounds=10, reset_l2=None,
                                    expected=dev.expected(), tolerances=[(0.0, 0.0)])
    assert wrong is None, wrong
