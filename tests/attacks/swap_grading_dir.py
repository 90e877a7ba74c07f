"""Attack: the candidate renames its grading directory and puts a symlink to / in its place, so that the parent,
reading results and writing files there afterwards, reads and writes the host instead.

Defence: `grading_dir_bound_alone` (the prepared worker's sandbox binds only that grading directory: a mount point,
which cannot be renamed or replaced from inside; the fresh-process path binds the directory itself as well).
Honest twin: the kernel behind the swap is the baseline, graded 120 in both paths. The static check, which refuses
`__file__` and os file functions on the entry path, is off: the mount is what this attack meets.
"""
import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()

SWAP_GRADING_DIR = BASELINE + '''
import os as _os
_g = _os.path.dirname(_os.path.abspath(__file__))
try:
    _os.rename(_g, _g + ".moved")
    _os.symlink("/", _g)
except OSError as _e:
    print("swap refused:", _e)
'''


@pytest.mark.parametrize("prepared", [True, False])
def test_candidate_cannot_rename_or_replace_its_grading_dir(tmp_path, require_bwrap, prepared, make_workspace):
    ws = make_workspace(SWAP_GRADING_DIR)
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(warm_worker=prepared,
                                                                                                  static_check=False))
    if prepared:
        grader.start_worker(seed=3)
    g = grader.grade(ws, seed=3)
    dirs = list((tmp_path / "grading").glob("grade-*"))
    assert all(d.is_dir() and not d.is_symlink() for d in dirs) and not any(d.name.endswith(".moved") for d in dirs)
    assert g.score == 120.0  # graded as the baseline it is; the swap was refused (the dir is a mount point)
