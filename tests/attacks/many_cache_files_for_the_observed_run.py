"""Attack: make the trusted parent copy a huge tree. The candidate's process leaves tens of thousands of empty files in
its grading directory's Triton cache; the grader copies that cache's kernels into the observed run's directory, and
since 2026-12-07 it does so beside its comparisons, before the correctness verdict is known. A review made 20,000
empty `.json` files: every one was copied (about 0.28 ms each on the CPU machine), for a kernel that then failed.

Defence: `observed_cache_copy_bounded`: `files.copy_regular_files` visits at most `files.MAX_COPIED_ENTRIES` (4096)
entries, and the observed run starts beside the comparisons only where the compile gate and the static check passed
and the grading directory's disk check did not fail (`Observing.start_observation`).
Honest twin: the baseline's own cache (a few files per kernel) is copied whole and observed (tests/test_observer.py).
No GPU here: the run ahead is a stand-in process (tests/fakes/observed_runs.py).
"""
import dataclasses

import pytest
from fakes.observed_runs import fake_fresh_runs, sleeper, with_run_ahead

from kernelgym.grader import files

N = 5  # the configs of conftest.fake_grader
OWN = ("rmsnorm_kernel", 4000.0)


@pytest.mark.parametrize("cap", [None, 2_000])
def test_a_candidates_cache_costs_the_parent_a_bounded_copy(fake_grader, observation, monkeypatch, cap):
    """A wrong kernel's tree of 20,000 empty cache files: at most `files.MAX_COPIED_ENTRIES` are copied for its
    observation, which went before the verdict was known; past the grading directory's file cap (disk check failed)
    the observation never starts and nothing is copied."""
    same = observation([[OWN]] * N)
    g = fake_grader([(0.05, 0.05)] * N, wrong_checked=() if cap else (0,))
    if cap:
        g.config = dataclasses.replace(g.config, grading_dir_cap_files=cap)
    run_harness = g._run_harness

    def harness_leaving_files(gdir, seed):
        result = run_harness(gdir, seed)
        cache = gdir / ".triton-cache" / "x"
        cache.mkdir(parents=True)
        for i in range(20_000):
            (cache / f"{i}.json").touch()
        return result
    monkeypatch.setattr(g, "_run_harness", harness_leaving_files)
    with_run_ahead(g, monkeypatch, lambda: sleeper(60))
    fake_fresh_runs(g, monkeypatch, 0.0, same)
    copied, write_new = [], files.write_new
    monkeypatch.setattr(files, "write_new", lambda path, data, *a, **k: (
        copied.append(path) if "observed-" in str(path) else None, write_new(path, data, *a, **k))[1])
    grade = g.grade(g.task.root, seed=1)
    assert not grade.correct
    if cap:
        assert grade.checks["disk"].startswith("failed") and len(copied) < 10
    else:
        assert len(copied) <= 4096 == files.MAX_COPIED_ENTRIES  # of the 20,000 planted
