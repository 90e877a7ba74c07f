"""Attack: the kernel file imports itself, or another name bound to its own module, so that chains through it are not
judged as module chains (a review at commit 7e21f50 scored 120 on the interpreter with ``import kernel`` then
``kernel.helper()`` and ``kernel.torch.nn.functional.rms_norm``, and with ``from kernel import helper as h``), or
imports inside a function, or rebinds an imported name.

Defences: `own_modules_not_importable` (the candidate's editable files and the reference are not importable; imports
are an allow-list, at module level, and an imported name is bound nowhere else).
Honest twin: the baseline, which imports torch, triton and triton.language, scores 120 (tests/test_grader.py).
"""
import pytest

from kernelgym.discovery import get_task
from kernelgym.grader.provenance import check_source

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()
RET = "    return y.reshape(x.shape)"
ATTACKS = {
    "import_self_then_helper": ("import kernel\n", "    return kernel.torch.nn.functional.rms_norm(x, (x.shape[-1],), "
                                                   "weight, eps)"),
    "from_self_import_helper": ("from kernel import rmsnorm as _again\n", RET),
    "import_inside_a_function": ("", "    import torch.nn.functional as F\n    return F.rms_norm(x, (x.shape[-1],), "
                                     "weight, eps)"),
    "import_the_reference": ("import reference\n", "    return reference.rmsnorm_reference(x, weight, eps)"),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_own_modules_and_nested_imports_are_refused(name):
    prefix, ret = ATTACKS[name]
    src = prefix + BASELINE.replace(RET, ret)
    rules = {f.rule for f in check_source({"kernel.py": src}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")}
    assert rules & {"imports_allowed", "imports_at_module_level", "module_names_allowed"}, rules


def test_a_self_import_earns_nothing(grade):
    prefix, ret = ATTACKS["import_self_then_helper"]
    g = grade(prefix + BASELINE.replace(RET, ret))
    assert not g.correct and g.score <= 20.0, g.summary()
    assert "imports_allowed" in "\n".join(g.stages[1].messages)


def test_honest_twin_the_baseline_imports_pass():
    assert check_source({"kernel.py": BASELINE}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference") == []
