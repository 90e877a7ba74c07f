"""Attack: forge a speedup on the unseen configs, where each config is graded on its own by one grader
(`kernelgym.unseen.evaluate` sets `grader.configs = [cfg]` per grading): where the baseline's observed device times,
which every speedup cross-check reads, are cached under a key made once per observer tool, config k is cross-checked
against the observed baseline time of the first unseen config graded. Behind a large first config the bar is loose
on the small ones, and a forged 2x passes; behind a small one honest speedups are withheld.

Defence: `baseline_key_follows_configs`: `Observing._baseline_key` is made per observer tool and configs, so each
grading's cross-check reads its own configs' observed baseline.
Honest twin: the same configs keep the same key (the baseline is observed once, not per grading).
No GPU here: the key is computed; the observation it names is what `GRADING_CACHE` holds for it.
"""
import dataclasses

from kernelgym.discovery import get_task
from kernelgym.grader import Grader
from kernelgym.hardware import all_profiles


def test_each_unseen_configs_cross_check_reads_its_own_observed_baseline(tmp_path, monkeypatch):
    task = get_task("triton-rmsnorm")
    g = Grader(task, all_profiles()["h200"], tmp_path, configs=[])
    monkeypatch.setattr(g, "observer_tool", lambda: "tracer")
    small, large = task.configs_for(False)[0], task.configs_for(False)[-1]
    g.configs = [large]  # the first unseen config graded
    first = g._baseline_key()
    g.configs = [small]
    assert g._baseline_key() != first
    g.configs = [dict(large)]  # honest twin: the same configs (a copy) name the same observation
    assert g._baseline_key() == first
    g.config = dataclasses.replace(g.config)  # nothing else in the key moved
    assert g._baseline_key() == first
