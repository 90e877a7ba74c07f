"""Attack: PyTorch computing the output in code the static check never read, because nothing reached it by name
from the entry point (a review at commit 7e21f50 scored 120 on the interpreter with each): a function handed to a
decorator of the candidate's own, whose wrapper the entry point calls; a decorated class whose methods do the work;
an async helper whose coroutine frame reaches builtins.

Defences: `whole_file_judged` (every statement of every editable file is judged, whatever reaches it; decorators are
Triton's only, classes plain, async code refused) and `static_provenance_check`.
Honest twin: the baseline with a plain helper function and a plain class of its own scores 120.
"""
import pytest

from kernelgym.discovery import get_task

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()
ENTRY = "def rmsnorm("
ATTACKS = {
    "function_handed_to_a_decorator": (
        "_IMPL = {}\n\n\ndef register(f):\n    _IMPL['f'] = f\n    return f\n\n\n@register\n"
        "def _torch(x, w, eps):\n    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)"
        " * w.float()).to(x.dtype)\n\n\n",
        "    return _IMPL['f'](x, weight, eps)\n"),
    "decorated_class_methods": (
        "def keep(c):\n    return c()\n\n\n@keep\nclass _Impl:\n    def __call__(self, x, w, eps):\n"
        "        return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)"
        "\n\n\n", "    return _Impl(x, weight, eps)\n"),
}


def _cheat(prefix: str, body: str) -> str:
    head, tail = BASELINE.split(ENTRY, 1)
    sig, rest = tail.split(":\n", 1)
    return head + prefix + ENTRY + sig + ":\n" + body + rest


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_code_reached_only_through_a_decorator_is_judged(grade, name):
    g = grade(_cheat(*ATTACKS[name]))
    assert g.compiled and not g.correct and g.score == 20.0, g.summary()
    assert "decorators_triton_only" in "\n".join(g.stages[1].messages) or \
        "classes_plain" in "\n".join(g.stages[1].messages), g.stages[1].messages


def test_async_code_is_refused():
    from kernelgym.grader.provenance import check_source
    src = BASELINE + "\n\nasync def _later():\n    pass\n"
    assert {f.rule for f in check_source({"kernel.py": src}, "kernel.py:rmsnorm", "reference.py:r")} == {"no_async"}


def test_honest_twin_a_plain_helper_and_class_score_120(grade):
    src = _cheat("class _Plan:\n    def __init__(self, n):\n        self.n = n\n\n\ndef _rows(x):\n"
                 "    return x.reshape(-1, x.shape[-1])\n\n\n", "    _Plan(x.shape[-1])\n    _rows(x)\n")
    g = grade(src)
    assert g.score == 120.0, g.summary()
