"""Attack: on the CPU interpreter a Triton value's ``.handle.data`` is the numpy array behind it; a kernel body that
reaches it computes with numpy (a review at commit 7e21f50 scored 120 this way, the kernel's ``tl`` code computing
nothing).

Defences: `kernel_attributes_listed` (a kernel body may use only Triton values' own attributes and methods,
allowed_names.TL_TENSOR_ATTRIBUTES: no ``.handle``, no ``.data``).
Honest twin: the baseline's ``x_ptr.dtype.element_ty``-style attributes pass; the baseline scores 120.
"""
from kernelgym.discovery import get_task
from kernelgym.grader.provenance import check_source

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()
KERNEL_LINE = "    row = tl.program_id(0)\n"
CHEAT = BASELINE.replace(KERNEL_LINE, KERNEL_LINE + "    a = x_ptr.handle.data\n    a[:] = a * 2\n", 1)
TWIN = BASELINE.replace(KERNEL_LINE, KERNEL_LINE + "    t = x_ptr.dtype.element_ty\n", 1)


def test_numpy_behind_a_triton_value_is_refused(grade):
    assert CHEAT != BASELINE
    rules = {f.rule for f in check_source({"kernel.py": CHEAT}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")}
    assert "kernel_attributes" in rules, rules
    g = grade(CHEAT)
    assert not g.correct and g.score <= 20.0, g.summary()


def test_honest_twin_triton_attributes_pass():
    assert TWIN != BASELINE
    assert check_source({"kernel.py": TWIN}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference") == []
