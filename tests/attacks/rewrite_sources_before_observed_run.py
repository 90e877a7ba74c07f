"""Attack: while its check runs, the candidate rewrites its own kernel file in the grading directory into an honest
version, so that the observed run (a second process, started later) imports a different kernel from the one that
computed the checked outputs.

Defence: `observed_run_reads_sources_first` (the observed run imports the editable files as the parent read them
before any candidate code ran, written into a directory of its own that the candidate's sandbox never binds).
Honest twin: an unchanged kernel file is what the observed run imports either way.
"""
import dataclasses
import json
import shutil
from types import SimpleNamespace

import pytest

from kernelgym.grader import observing as grader_module
from kernelgym.grader.protocol import OBSERVED_PREFIX, OUTPUTS


@pytest.mark.parametrize("rewrite", [True, False])
def test_observed_run_imports_the_sources_read_before_the_candidate_ran(fake_grader, observation, monkeypatch,
                                                                        rewrite):
    g = fake_grader([(0.05, 0.05)] * 5)
    original = (g.task.root / "kernel.py").read_text()
    seen = {}

    class Sandbox:
        def run(self, argv, limits=None):
            request = json.loads(open(argv[-1]).read())
            seen["kernel"] = open(f"{request['directory']}/kernel.py").read()
            seen["directory"] = request["directory"]
            # The observed run's outputs: those the check saved (the candidate's kernel computes the same either way).
            shutil.copy(g.session.gdir / OUTPUTS, f"{request['results_directory']}/{OBSERVED_PREFIX}{OUTPUTS}")
            return SimpleNamespace(timed_out=False, returncode=0, output="")

    honest = observation([[("rmsnorm_kernel", 4e3)]] * 5)
    monkeypatch.setattr(g, "observer_unavailable", lambda: None)
    # An observed run of its own (under ncu, sampled, or observe_in_checked_run off): a traced checked run has none.
    g.config = dataclasses.replace(g.config, observe_in_checked_run=False)
    monkeypatch.setattr(g, "baseline_observation", lambda: honest)
    monkeypatch.setattr(grader_module, "find_ncu", lambda: "/usr/bin/true")
    monkeypatch.setattr(grader_module, "make_sandbox", lambda *a, **k: Sandbox())
    monkeypatch.setattr(g, "_read_observation", lambda *a, **k: honest)
    real = g._run_harness

    def checked_then_rewritten(gdir, seed):
        result = real(gdir, seed)
        if rewrite:
            (gdir / "kernel.py").write_text("# rewritten by the candidate while it ran\n")
        return result
    monkeypatch.setattr(g, "_run_harness", checked_then_rewritten)
    grade = g.grade(g.task.root, seed=1)
    assert seen["kernel"] == original
    assert str(g.session.gdir) not in seen["directory"]
    assert grade.checks["observer"] == "passed"
