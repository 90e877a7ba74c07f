"""Attack: a kernel whose module cannot import prints the harness's "candidate imported" line and then kills its
process at import (a BaseException the harness does not catch), so that its death reads as a runtime failure after a
successful import: the compile gate's 20 points for a module that never imported. An RL policy finds such a line.

Defence: `import_recorded_by_file` (the harness records the import in a file beside the result; where the static check
refused the sources, which may write that file, a death without a result fails compile; the printed line is for
the log only).
Honest twin: a kernel that imports and then crashes in its call still passes compile (20;
tests/attacks/crash_the_harness.py), and the baseline scores 120.
"""
import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig
from kernelgym.grader.protocol import IMPORTED_MARKER

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()
FORGED = BASELINE + f"\nprint({IMPORTED_MARKER!r}, flush=True)\nraise KeyboardInterrupt\n"


@pytest.mark.parametrize("warm_worker", [True, False])
def test_a_printed_import_line_earns_no_compile_points(grade, warm_worker):
    g = grade(FORGED, config=GraderConfig(warm_worker=warm_worker))
    assert not g.compiled and g.score == 0.0, (g.stages[0].messages, g.score)


def test_an_import_then_crash_still_compiles(grade):
    src = BASELINE.replace('    x2 = x.reshape(-1, x.shape[-1])', '    raise KeyboardInterrupt\n    x2 = x.reshape(-1, x.shape[-1])')
    g = grade(src)
    assert g.compiled and not g.correct and g.score == 20.0, (g.stages[1].messages, g.score)


FORGED_FILE = BASELINE + ('\nimport os\nopen(os.path.join(os.path.dirname(__file__), "imported"), "w").write("imported\\n")'
                          '\nraise KeyboardInterrupt\n')


@pytest.mark.parametrize("warm_worker", [True, False])
def test_a_forged_import_file_earns_no_compile_points(grade, warm_worker):
    # The static check refuses the write; the harness still runs the module, which dies without a result.
    g = grade(FORGED_FILE, config=GraderConfig(warm_worker=warm_worker))
    assert not g.compiled and g.score == 0.0, (g.stages[0].messages, g.score)
