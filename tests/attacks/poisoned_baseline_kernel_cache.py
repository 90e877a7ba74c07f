"""Attack: the candidate rewrites the compiled baseline kernels in its grading directory's Triton cache, hoping that
later gradings (its own next submission, or another episode's in this process) load them as the baseline's: a slow
"baseline" makes every later speedup larger.

Defence: `baseline_kernel_cache_before_candidate` (the cache later gradings are seeded from is copied once, when the
worker has prepared a grading and before the ``go`` that lets the candidate's code run; what a candidate writes
afterwards reaches only its own grading).
Honest twin: the grading itself scores as it would without the hook.
"""
import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()
MARKS_IMPORT = BASELINE.replace("import torch\n", "import torch\nopen('imported.txt', 'w').close()\n", 1)


@pytest.mark.timeout(120)
def test_the_keep_hook_runs_after_preparing_and_before_the_candidate_is_imported(tmp_path, require_bwrap,
                                                                                 make_workspace, monkeypatch):
    """The copy is trusted only if no candidate code ran before it: the candidate here marks its import in its
    grading directory, and the hook must find no mark yet."""
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading",
                    GraderConfig(static_check=False, keep_grading_dirs=True))
    seen = []
    monkeypatch.setattr(grader, "_keep_kernel_cache", lambda gdir: seen.append((gdir / "imported.txt").exists()))
    grader.start_worker(seed=4)
    g = grader.grade(make_workspace(MARKS_IMPORT), seed=4)
    assert g.score == 120.0, g.summary()
    assert seen == [False] and (grader.session.gdir / "imported.txt").exists()
