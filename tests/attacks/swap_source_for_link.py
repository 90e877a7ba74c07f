"""Attack: at import, the candidate replaces its own kernel.py in the grading directory with a symlink to
/proc/self/mem (or a FIFO, or a huge file), so that the trusted parent, reading the source after the run (for the
static check, or for notes on launch options), reads its own memory, blocks, or crashes step().

Defence: `sources_read_before_run` (the parent reads the candidate's sources once, as capped regular files, right
after copying them in and before any candidate code runs; nothing reads them afterwards).
Honest twin: the kernel behind the swap is the baseline: graded 120, its notes taken from the source as copied.
"""
from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()

SWAP_SOURCE = BASELINE + '''
import os as _os
_me = _os.path.abspath(__file__)
_os.unlink(_me)
_os.symlink("/proc/self/mem", _me)
'''


def test_a_source_swapped_for_a_link_after_the_copy_is_not_read_again(grade):
    # The static check (which refuses `__file__` and os file functions) is off: the read-once is what this meets.
    g = grade(SWAP_SOURCE, config=GraderConfig(static_check=False))
    assert g.score == 120.0, g.summary()
