"""Attack: the harness calls what the entry point's name holds after import, not the function the check read: the
file deletes the checked ``rmsnorm`` and a module-level ``__getattr__`` hands the harness an unchecked one (a review at
commit 7e21f50 scored 120 on the interpreter), or rebinds the name later in the file.

Defences: `entry_point_fixed` (the entry point is defined exactly once at the top level, undecorated, and bound,
deleted or declared global nowhere else; dunder names such as a module-level ``__getattr__`` are never bound).
Honest twin: the baseline scores 120 (tests/test_grader.py).
"""
import pytest

from kernelgym.discovery import get_task
from kernelgym.grader.provenance import check_source

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()
ATTACKS = {
    "delete_then_module_getattr": "\n\ndel rmsnorm\n\n\ndef __getattr__(name):\n    return _fallback\n",
    "rebind_later": "\n\nrmsnorm = _fallback\n",
    "global_rebind": "\n\ndef _swap():\n    global rmsnorm\n    rmsnorm = _fallback\n\n\n_swap()\n",
}
FALLBACK = "\n\ndef _fallback(x, weight, eps=1e-6):\n    return x\n"


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_swapped_entry_point_is_refused(name):
    src = BASELINE + FALLBACK + ATTACKS[name]
    rules = {f.rule for f in check_source({"kernel.py": src}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")}
    assert rules & {"entry_point_fixed", "no_dunder_bindings"}, rules


def test_the_module_getattr_swap_earns_nothing(grade):
    g = grade(BASELINE + FALLBACK + ATTACKS["delete_then_module_getattr"])
    assert not g.correct and g.score <= 20.0, g.summary()


def test_honest_twin_a_helper_beside_the_entry_point_passes():
    assert check_source({"kernel.py": BASELINE + FALLBACK}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference") == []
