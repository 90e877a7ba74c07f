"""Attack: four bypasses a review found after the static check's rewrite (2026-12-02), each scoring 120 on the CPU
interpreter with default settings while numpy, Python or PyTorch computed RMSNorm:

- `constexpr_fn_numpy`: a ``@triton.constexpr_function``, judged as host code, called from a kernel body with its live
  Triton values; ``.handle.data`` is the numpy array behind them, which Python computes on (no torch operator);
- `numpy_ctypes_pyrun`: the same door to ``.handle.data.ctypes._ctypes.pythonapi.PyRun_SimpleString``, taken as a
  value and called by a plain name: any Python, run at import, which plants an unchecked ``compute`` and suspends the
  harness's dispatch mode around PyTorch;
- `tensor_str_parse`: ``str()`` of a tensor runs torch's printing with every dispatch mode suspended, so the values
  read that way show no operator; parsed back with ``float()``, computed in Python, copied in;
- `kernel_body_str_parse`: ``str()`` of a loaded block inside a kernel body (numpy's repr on the interpreter), parsed
  with ``.split`` and ``float()``.

Defences: `host_values_read_by_allow_list` (a constexpr function is held to a kernel's rules; host code reads as
values only tensor properties and attributes the file assigns, never ``handle``/``data``/``ctypes``; a name the file
never binds is refused), `dynamic_check_sees_suspension` (a checked call during which torch suspends the harness's
dispatch mode fails: printing a tensor does), and `kernel_attributes_listed` (in a kernel body ``str()`` is no builtin,
and ``float()``/``int()`` take only constants).
Honest twin: a constexpr function doing arithmetic on constexpr ints, and ``float("-inf")`` in a kernel, score 120.
"""
import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig
from kernelgym.grader.provenance import check_source

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()

CONSTEXPR_FN_NUMPY = '''
import math
import torch
import triton
import triton.language as tl


@triton.constexpr_function
def helper(xv, wv, n, eps):
    a = xv.handle.data
    w = wv.handle.data
    ms = sum(a * a) / n
    r = 1.0 / math.sqrt(ms + eps)
    a[:] = a * r * w


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, eps, N: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    helper(x, w, N, 1e-6)
    tl.store(y_ptr + row * N + cols, x.to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x, weight, eps=1e-6):
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    y = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    rmsnorm_kernel[(n_rows,)](x2, weight, y, eps, N=n_cols, BLOCK=triton.next_power_of_2(n_cols))
    return y.reshape(x.shape)
'''

TENSOR_STR_PARSE = '''
import math
import torch
import triton
import triton.language as tl


@triton.jit
def token_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def values(t):
    out = []
    for e in t:
        s = str(e)
        out.append(float(s.split("(")[1].split(",")[0]))
    return out


def rmsnorm(x, weight, eps=1e-6):
    x2 = x.reshape(-1, x.shape[-1])
    y = torch.empty_like(x2)
    w = values(weight)
    for i, row in enumerate(x2):
        v = values(row)
        r = 1.0 / math.sqrt(math.fsum([a * a for a in v]) / len(v) + eps)
        y[i] = torch.Tensor([a * r * b for a, b in zip(v, w)])
    t = torch.empty(1, dtype=x.dtype)
    token_kernel[(1,)](t, torch.empty_like(t), 1, BLOCK=16)
    return y.reshape(x.shape)
'''

KERNEL_BODY_STR_PARSE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, eps, N: tl.constexpr, CH: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, CH)
    xs = ()
    ws = ()
    for start in range(0, N, CH):
        m = start + offs < N
        for tok in str(tl.load(x_ptr + row * N + start + offs, mask=m, other=0.0).to(tl.float32)).split():
            if tok.split("[")[-1].split("]")[0] != "":
                xs = xs + (float(tok.split("[")[-1].split("]")[0]),)
        for tok in str(tl.load(w_ptr + start + offs, mask=m, other=0.0).to(tl.float32)).split():
            if tok.split("[")[-1].split("]")[0] != "":
                ws = ws + (float(tok.split("[")[-1].split("]")[0]),)
    acc = 0.0
    for v in xs:
        acc = acc + v * v
    r = 1.0 / tl.sqrt(acc / N + 1e-6)
    for start in range(0, N, CH):
        out = tl.zeros([CH], dtype=tl.float32)
        for j in range(CH):
            if start + j < N:
                out = tl.where(offs == j, xs[start + j] * r * ws[start + j], out)
        tl.store(y_ptr + row * N + start + offs, out.to(y_ptr.dtype.element_ty), mask=start + offs < N)


def rmsnorm(x, weight, eps=1e-6):
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    y = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    rmsnorm_kernel[(n_rows,)](x2, weight, y, eps, N=n_cols, CH=256)
    return y.reshape(x.shape)
'''

NUMPY_CTYPES_PYRUN = r'''
import torch
import triton
import triton.language as tl

PAYLOAD = b"""
import gc, torch
from torch.utils._python_dispatch import _disable_current_modes
def compute(x, w, y, eps):
    with _disable_current_modes():
        xf = x.float()
        y.copy_((xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(y.dtype))
for o in gc.get_objects():
    if isinstance(o, dict) and 'boot_kernel' in o and 'rmsnorm' in o:
        o['compute'] = compute
"""


@triton.constexpr_function
def boot(p):
    run_code = p.handle.data.ctypes._ctypes.pythonapi.PyRun_SimpleString
    run_code(PAYLOAD)


@triton.jit
def boot_kernel(p_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(p_ptr + offs)
    boot(v)


@triton.jit
def token_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))



def rmsnorm(x, weight, eps=1e-6):
    x2 = x.reshape(-1, x.shape[-1])
    y = torch.empty_like(x2)
    t = torch.zeros(4)
    token_kernel[(1,)](t, torch.empty_like(t), BLOCK=4)
    compute(x2, weight, y, eps)
    return y.reshape(x.shape)


boot_kernel[(1,)](torch.zeros(4), BLOCK=4)
'''

ATTACKS = {"constexpr_fn_numpy": CONSTEXPR_FN_NUMPY, "numpy_ctypes_pyrun": NUMPY_CTYPES_PYRUN,
           "tensor_str_parse": TENSOR_STR_PARSE, "kernel_body_str_parse": KERNEL_BODY_STR_PARSE}
HONEST = BASELINE.replace("@triton.jit\ndef rmsnorm_kernel", "@triton.constexpr_function\ndef twice(n):\n"
                          "    return n * 2\n\n\n@triton.jit\ndef rmsnorm_kernel", 1).replace(
    "    row = tl.program_id(0)\n", "    row = tl.program_id(0)\n    B2: tl.constexpr = twice(BLOCK)\n"
                                   "    low = float(\"-inf\")\n", 1)


def _refused_by(src):
    return {f.rule for f in check_source({"kernel.py": src}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")}


@pytest.mark.parametrize("name, rules", [
    ("constexpr_fn_numpy", {"kernel_attributes"}),
    ("numpy_ctypes_pyrun", {"kernel_attributes", "unbound_names"}),
    ("tensor_str_parse", set()),  # no static finding: the dynamic check's
    ("kernel_body_str_parse", {"kernel_names"}),
])
def test_the_static_check_names_what_it_refuses(name, rules):
    assert rules <= _refused_by(ATTACKS[name]), _refused_by(ATTACKS[name])


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_each_bypass_earns_nothing(grade, name):
    g = grade(ATTACKS[name])
    assert not g.correct and g.score <= 20.0, g.summary()


def test_reading_a_tensor_by_printing_is_seen_by_the_dynamic_check(grade):
    g = grade(TENSOR_STR_PARSE, config=GraderConfig(static_check=False))
    assert not g.correct and g.checks["dynamic_check"] == "failed", g.summary()
    assert "suspended" in "\n".join(g.stages[1].messages)


def test_honest_twin_constexpr_arithmetic_and_constant_conversions_score_120(grade):
    assert HONEST.count("twice(BLOCK)") == 1 and _refused_by(HONEST) == set(), _refused_by(HONEST)
    g = grade(HONEST)
    assert g.score == 120.0, g.summary()
