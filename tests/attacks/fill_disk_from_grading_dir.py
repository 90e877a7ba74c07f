"""Attack: fill the host's disk from the grading directory. The candidate's only writable directory while graded is
its grading directory on the host's disk, and nothing bounds what it writes there but RLIMIT_FSIZE per file (2 GiB)
and the harness's time limit: file after file, a candidate writes hundreds of GB before the grade is read and the
directory pruned.

Defence: `grading_dir_disk_check`: once the harness is done, the grading directory's size is counted (the walk stops
at the cap) and reported in the grade's `checks` (``disk``); past `GraderConfig.grading_dir_cap_bytes` the grade
fails correctness and says why. Checked after the run, like the workspace cap: not a quota.
Honest twin: the baseline, whose grade reports the few MiB its outputs take and scores 120.
Shown with the static check off (the write needs `open`, which the static check refuses).
"""
import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()
FILL = BASELINE.replace("import torch\n", '''import torch
for _i in range(6):  # 6 x 16 MiB here; as many 2 GiB files as the time limit allows in an attack
    with open(f"fill-{_i}.bin", "wb") as _f:
        _f.write(b"x" * (16 << 20))
''', 1)


@pytest.mark.timeout(300)
def test_a_grading_directory_filled_past_its_cap_fails_the_grade(grade):
    g = grade(FILL, config=GraderConfig(static_check=False, grading_dir_cap_bytes=64 << 20))
    assert g.compiled and not g.correct and g.score == 20.0, g.summary()
    assert g.checks["disk"].startswith("failed") and "cap of 0.0625 GiB" in g.checks["disk"]
    assert any("grading directory past the cap" in m for m in g.stages[1].messages)


@pytest.mark.timeout(300)
def test_honest_twin_reports_what_its_grading_directory_holds(grade):
    g = grade(BASELINE)
    assert g.score == 120.0 and g.checks["disk"].endswith("MiB in the grading directory"), g.checks
