"""Attack: four bypasses a second review of the static check found (2026-12-02), on the CPU interpreter:

- `injected_numpy_global`: Triton's interpreter writes its own globals (``np``, ``inspect``, ...) into a kernel
  file's globals at the first launch; a name counted as bound when any scope bound it (a parameter ``np`` of an
  unrelated function) let the wrapper read numpy and compute RMSNorm with it (fp16 configs correct, no operator);
- `python_math_in_kernel`: ``math.sqrt`` of a Triton value inside a kernel body (on the interpreter the value's
  ``__index__`` makes it Python's number: Python computes, and the kernel does not compile on a GPU);
- `torch_name_imported_into_kernel`: ``from torch import rsqrt`` then ``rsqrt(...)`` in a kernel body (the kernel's
  module rule judged chains only, not imported names);
- `own_attribute_on_a_tensor`: an attribute the file assigns on some object of its own (``b._typed_storage = None``)
  made ``x._typed_storage`` readable as a value on a tensor.

Defence: `names_resolved_by_scope` (a name resolves by Python's scopes: its own, an enclosing function's or the
module's, and a global Triton's interpreter also writes is read only where the file binds it for certain at its top
level; the file's own attributes are read back only on instances of its own classes; in a kernel body ``math`` takes only constants and constexpr parameters, only triton and math imports are names,
and no item is assigned).
Honest twins: a parameter named ``np`` read in its own function, ``math.log2`` of a constexpr in a kernel,
``self.block`` of the file's own class and an ``if __name__ == "__main__":`` self-test block pass the check; the
baseline with them scores 120.
"""
import pytest

from kernelgym.discovery import get_task
from kernelgym.grader.provenance import check_source

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()
HEAD = '''
import math
import torch
import triton
import triton.language as tl


@triton.jit
def token_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

'''
ATTACKS = {
    "injected_numpy_global": (HEAD + '''

def _binds(np):
    return np


def rmsnorm(x, weight, eps=1e-6):
    y = torch.empty_like(x)
    token_kernel[(1,)](x, y, 1, BLOCK=2)
    a = np.asarray(x)
    ya = np.asarray(y)
    ya[...] = a
    return y
''', {"unbound_names"}),
    "python_math_in_kernel": (BASELINE.replace("import torch", "import math\nimport torch", 1).replace(
        "tl.sum(acc, axis=0)", "math.sqrt(tl.sum(acc, axis=0))"), {"kernel_names"}),
    "torch_name_imported_into_kernel": (BASELINE.replace("import torch", "import torch\nfrom torch import empty", 1)
                                        .replace("tl.sum(acc, axis=0)", "empty(tl.sum(acc, axis=0))"),
                                        {"kernel_names"}),
    "own_attribute_on_a_tensor": (HEAD + '''

class _Box:
    pass


def _never():
    b = _Box()
    b._typed_storage = None


def rmsnorm(x, weight, eps=1e-6):
    y = torch.empty_like(x)
    get = x._typed_storage
    return y
''', {"host_values_allowed"}),
    "list_item_state_in_kernel": (BASELINE.replace("    mean_sq = tl.sum(acc, axis=0) / n_cols", "    mean_sq = tl.sum(acc, axis=0) / n_cols\n    box = [0.0]\n"
                                                   "    box[0] = mean_sq", 1), {"kernel_statements"}),
}
HONEST = BASELINE.replace("import torch", "import math\nimport torch", 1) + '''

def _uses_its_own(np):
    return np + 1


class Plan:
    def __init__(self, block):
        self.block = block

    def grid(self):
        return (self.block,)


def _plan(n):
    p = Plan(n)
    return p.block + p.grid()[0]


if __name__ == "__main__":
    x = torch.randn(4, 128)
    print(torch.nn.functional.rms_norm(x, (128,)))
'''


def _rules(src):
    return {f.rule for f in check_source({"kernel.py": src}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")}


def test_the_attacks_apply_to_the_baseline():
    for name in ("python_math_in_kernel", "torch_name_imported_into_kernel", "list_item_state_in_kernel"):
        assert ATTACKS[name][0] != BASELINE, name


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_the_static_check_refuses_each_bypass(name):
    src, rules = ATTACKS[name]
    assert rules <= _rules(src), _rules(src)


def test_the_injected_global_earns_nothing(grade):
    g = grade(ATTACKS["injected_numpy_global"][0])
    assert not g.correct and g.score <= 20.0, g.summary()


def test_honest_twin_scopes_instances_and_a_main_block_score_120(grade):
    assert _rules(HONEST) == set(), _rules(HONEST)
    g = grade(HONEST)
    assert g.score == 120.0, g.summary()
