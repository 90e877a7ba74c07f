"""Attack: a torch function (or dispatch) mode entered at import and left active: it sees every torch call the
harness makes, and could fill a returned tensor of zeros with the right values when the harness copies it out
(a review's attack).

Defence: `no_torch_mode_active` (no torch function or dispatch mode may be active when an output is taken).
Graded with the static provenance check off, which refuses `torch.overrides` on the entry point's path first; a
mode entered out of its sight (code built at run time) would be the same attack.
Honest twin: the baseline, with no mode, scores 120 (tests/test_grader.py).
"""
from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()


def test_a_torch_function_mode_left_active_fails_the_check(grade):
    # A mode entered at import could fill a returned plain tensor when the harness copies it out (a review's
    # attack: zeros returned, the right values written in at .detach()).
    src = BASELINE + '''

class _Mode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


_Mode().__enter__()
'''
    g = grade(src, config=GraderConfig(static_check=False))
    assert g.compiled and not g.correct and "mode is active" in "\n".join(g.stages[1].messages), g.summary()
