"""The static provenance check (kernelgym/grader/provenance.py): PyTorch computing the output on the entry point's
path, through any spelling, is found; the built-in baselines and what a kernel wrapper needs (allocation, views,
strides, launches) are not."""
import pytest

from kernelgym.discovery import discover_tasks, get_task
from kernelgym.grader.provenance import check_source

TASK = get_task("triton-rmsnorm")
BASE = (TASK.root / "kernel.py").read_text()
RET = "    return y.reshape(x.shape)"


def findings(src):
    return [str(f) for f in check_source({"kernel.py": src}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")]


@pytest.mark.parametrize("name", sorted(discover_tasks()))
def test_every_built_in_baseline_passes(name):
    task = get_task(name)
    files = {f: (task.root / f).read_text() for f in task.spec.editable_files if f.endswith(".py")}
    assert check_source(files, task.spec.entry_point, task.spec.reference) == []


@pytest.mark.parametrize("source, expected", [
    (BASE.replace(RET, "    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)"),
     "torch compute `torch.rsqrt`"),
    ("import torch.nn.functional as F\n" + BASE.replace(RET, "    return F.rms_norm(x, (x.shape[-1],), weight, eps)"),
     "torch.nn.functional.rms_norm"),
    ("from torch import nn\n" + BASE.replace(RET, "    return nn.functional.silu(x)"), "torch.nn.functional.silu"),
    ("from torch import rsqrt as r\n" + BASE, "imports torch compute `torch.rsqrt`"),
    ("import torch as T\n" + BASE.replace(RET, "    return T.ops.aten.mul(x, 2)"), "torch.ops.aten.mul"),
    (BASE.replace(RET, "    return getattr(torch, 'rs' + 'qrt')(x)"), "`getattr` on a torch module"),
    (BASE.replace("import torch\n", "import torch\nfrom reference import rmsnorm_reference\n"), "reference module"),
    (BASE.replace(RET, "    try:\n        return y.reshape(x.shape)\n    except Exception:\n        import reference\n"
                       "        return reference.rmsnorm_reference(x, weight, eps)"), "reference module"),
    (BASE.replace(RET, "    import importlib.util as u\n    s = u.spec_from_file_location('r', 'reference.py')\n"
                       "    return y"), "reads the task's reference"),
    (BASE.replace(RET, "    return _helper(x)\n\ndef _helper(x):\n    return x.sum(-1)"), "`.sum()`"),
    (BASE.replace(RET, "    return x @ weight"), "uses `@`"),
    (BASE.replace(RET, "    exec('y = x')\n    return y"), "uses `exec`"),
    ("import kernelgym_inputs\n" + BASE, "one of the grader's own modules"),  # the harness's name for the reference
])
def test_pytorch_doing_the_work_is_found(source, expected):
    assert any(expected in f for f in findings(source)), findings(source)


def test_code_off_the_entry_points_path_is_not_judged():
    # A helper nobody calls.
    src = BASE + "\n\ndef _debug(x):\n    return x.sum()\n"
    assert findings(src) == []


KERNEL_LINE = "    row = tl.program_id(0)\n"


@pytest.mark.parametrize("line, expected", [
    ("    from reference import rmsnorm_reference\n", "imports inside a kernel"),
    ("    global _ARGS\n", "declares `global`"),
    ("    _ARGS[2].copy_(_ARGS[0])\n", "reads `_ARGS` inside a kernel"),
    ("    (_ARGS[2] if row else 0).copy_(_ARGS[0])\n", "reads `_ARGS` inside a kernel"),
    ("    _LATER.copy_(x_ptr)\n", "reads `_LATER` inside a kernel"),  # bound to a constant, then to a list
    ("    torch.ones(1)\n", "uses `torch.ones` inside a kernel"),
    ("    open('x', 'w')\n", "uses `open`"),
    ("    tl.__dict__\n", "reaches `__dict__`"),
])
def test_a_kernel_body_is_held_to_what_triton_compiles(line, expected):
    # On the CPU interpreter a kernel's body runs as Python: it may hold only what Triton compiles.
    src = BASE.replace("import torch\n", "import torch\n_ARGS = []\n_LATER = 1\nif True:\n    _LATER = []\n", 1).replace(
        KERNEL_LINE, KERNEL_LINE + line, 1)
    assert any(expected in f for f in findings(src)), findings(src)


def test_what_triton_compiles_in_a_kernel_body_passes():
    # Methods of the kernel's own values on any expression, builtins, tl.constexpr globals, the file's jit helpers.
    helper = "@triton.jit\ndef _twice(v):\n    return v * 2\n\n\n"
    src = BASE.replace("import torch\n", "import torch\nSCALE: tl.constexpr = 1\nSHIFT = tl.constexpr(0)\n"
                                          "FACTOR = -2.0\nDTYPE = tl.float16\n", 1)
    src = src.replace("import triton.language as tl\n", "import triton.language as tl\n", 1).replace(
        "@triton.jit\ndef rmsnorm_kernel", helper + "@triton.jit\ndef rmsnorm_kernel", 1).replace(
        KERNEL_LINE, KERNEL_LINE + "    k = (_twice(row) + SCALE * SHIFT * FACTOR).to(DTYPE)\n"
                                   "    for i in range(min(2, 3)):\n        k += i\n", 1)
    assert "SCALE: tl.constexpr" in src and "_twice(row)" in src
    assert findings(src) == []


def test_a_constexpr_function_a_kernel_calls_is_host_code_and_checked():
    # Triton runs a @triton.constexpr_function on the host while it compiles the kernel that calls it.
    src = BASE.replace("@triton.jit\ndef rmsnorm_kernel", "@triton.constexpr_function\ndef pick(n):\n"
                       "    return open('reference.py').read()\n\n\n@triton.jit\ndef rmsnorm_kernel", 1).replace(
        KERNEL_LINE, KERNEL_LINE + "    B2: tl.constexpr = pick(BLOCK_SIZE)\n", 1)
    assert any("uses `open`" in f for f in findings(src)), findings(src)


@pytest.mark.parametrize("expression, expected", [
    ("os.sys.modules['kernelgym_inputs']", "reaches `.sys`"),
    ("triton.runtime.cache.os.environ", "reaches `.os`"),
    ("triton.runtime.autotuner.builtins.exec", "reaches `.builtins`"),
    ("triton.testing.subprocess.run", "reaches `.subprocess`"),
])
def test_refused_names_are_refused_as_any_modules_attributes(expression, expected):
    src = "import os\n" + BASE.replace(RET, f"    _ = {expression}\n{RET}")
    assert any(expected in f for f in findings(src)), findings(src)


def test_module_level_code_is_judged_it_runs_at_import():
    assert any("torch.matmul" in f for f in findings(BASE + "\n_W = torch.matmul(torch.ones(2, 2), torch.ones(2, 2))\n"))


def test_a_decorator_of_the_candidates_own_named_jit_does_not_make_a_kernel():
    src = BASE.replace(RET, "    return work(x)") + "\n\ndef jit(f):\n    return f\n\n@jit\ndef work(x):\n    return x.mean(-1)\n"
    assert any("`.mean()`" in f for f in findings(src)), findings(src)


def test_methods_reached_through_torch_tensor_are_torch_compute():
    assert any("torch.Tensor.mean" in f for f in findings(BASE.replace(RET, "    return torch.Tensor.mean(x, -1)")))


@pytest.mark.parametrize("prefix, expected", [
    ("import os as _o\n_o.fork()\n", "`os.fork`"),
    ("from os import fork\n", "`os.fork`"),
    ("import subprocess\n", "`subprocess`"),
    ("import threading\n", "`threading`"),
    ("import gc\n", "`gc`"),
    ("import ctypes\n", "`ctypes`"),
    ("x = __builtins__\n", "`__builtins__`"),
])
def test_process_and_memory_tricks_at_import_are_refused(prefix, expected):
    # A forked helper rewriting the outputs after the harness saved them, a thread working while the baseline is
    # timed, a walk of the garbage collector: none has a place in a kernel wrapper.
    assert any(expected in f for f in findings(prefix + BASE)), findings(prefix + BASE)


def test_os_path_is_fine():
    assert findings("import os\n_D = os.path.join('a', 'b')\n" + BASE) == []


@pytest.mark.parametrize("prefix, expected", [
    ("import os\n_D = os.path.dirname(__file__)\n", "`__file__`"),
    ("import os\n_E = os.environ.get('CUDA_INJECTION64_PATH')\n", "`os.environ`"),
    ("from os import getenv\n", "`os.getenv`"),
    ("import os\n_W = list(os.walk('/tmp'))\n", "`os.walk`"),
    ("_F = open('/tmp/triton-cache/x.so', 'wb')\n", "`open`"),
    ("import pathlib\n", "`pathlib`"),
    ("import base64\n", "`base64`"),
])
def test_host_files_and_environment_are_refused(prefix, expected):
    # They tell the observed run (a second process, the profiler injected) from the checked one, and write into
    # Triton's cache, which the observed run reuses (review, 2026-12-01).
    assert any(expected in f for f in findings(prefix + BASE)), findings(prefix + BASE)


def test_reading_device_values_on_the_host_is_refused():
    # `.item()` reads input values on the host: a cache keyed by them returns work done elsewhere (review, 2026-12-01).
    src = BASE.replace(RET, "    _k = x.item()\n" + RET)
    assert any("`.item`" in f or "item" in f for f in findings(src)), findings(src)


CUDA = get_task("cuda-gelu")
BINDING = (CUDA.root / "binding.cpp").read_text()


def cpp_findings(src):
    from kernelgym.grader.provenance import check_cpp_source
    return [str(f) for f in check_cpp_source({"binding.cpp": src})]


def test_the_cuda_baseline_sources_pass():
    from kernelgym.grader.provenance import check_cpp_source
    files = {f: (CUDA.root / f).read_text() for f in CUDA.spec.editable_files}
    assert check_cpp_source(files) == []


@pytest.mark.parametrize("replacement, expected", [
    ("return at::gelu(x);", "`at::gelu`"),
    ("return torch::nn::functional::gelu(x);", "`torch::nn`"),
    ("return x.sigmoid() * x;", "`.sigmoid()`"),
    ("return torch::matmul(x, x);", "`torch::matmul`"),
])
def test_aten_compute_in_a_binding_is_found(replacement, expected):
    src = BINDING.replace("return y;", replacement)
    assert any(expected in f for f in cpp_findings(src)), cpp_findings(src)


def test_names_in_cpp_comments_and_strings_are_not_code():
    src = BINDING.replace("return y;", '// at::gelu would be slower\n  TORCH_CHECK(true, "x.sum() is not used");\n  return y;')
    assert cpp_findings(src) == []


# Bypasses an adversarial review found in the first version (2026-12-01); each must give a finding now.
BYPASSES = {
    'alias_module': '\nimport torch\nT = torch\ndef rmsnorm(x, weight, eps):\n    return T.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)\n',
    'default_arg': '\nimport torch\ndef rmsnorm(x, weight, eps, _f=torch.nn.functional.rms_norm):\n    return _f(x, (x.shape[-1],), weight, eps)\n',
    'shadow_nested_def': '\nimport torch\ndef rmsnorm(x, weight, eps):\n    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)\ndef _unused():\n    def rmsnorm(x, weight, eps):\n        return x\n',
    'class_method': '\nimport torch\nclass _K:\n    def run(self, x, weight, eps):\n        return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)\ndef rmsnorm(x, weight, eps):\n    return _K().run(x, weight, eps)\n',
    'callable_instance_entry': '\nimport torch\nclass _K:\n    def __call__(self, x, weight, eps):\n        return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)\nrmsnorm = _K()\n',
    'shadowed_triton_jit': '\nimport torch\nimport triton\ntriton.jit = lambda f: f\n@triton.jit\ndef _work(x, weight, eps):\n    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)\ndef rmsnorm(x, weight, eps):\n    return _work(x, weight, eps)\n',
    'redefined_jit_name': '\nimport torch\nfrom triton import jit\ndef jit(f):\n    return f\n@jit\ndef _work(x, weight, eps):\n    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)\ndef rmsnorm(x, weight, eps):\n    return _work(x, weight, eps)\n',
    'method_not_listed': '\ndef rmsnorm(x, weight, eps):\n    return x.multiply(x.multiply(x).nanmean(-1, keepdim=True).add(eps).rsqrt_()).multiply(weight)\n',
    'bound_method_alias': '\ndef rmsnorm(x, weight, eps):\n    m = x.mean\n    r = (x * x).rsqrt if False else None\n    ms = (x * x).mean\n    s = ms(-1, keepdim=True)\n    q = (s + eps).rsqrt\n    return x * q() * weight\n',
    'getattr_tensor': '\ndef rmsnorm(x, weight, eps):\n    s = getattr(x * x, "mean")(-1, keepdim=True)\n    return x * getattr(s + eps, "rsqrt")() * weight\n',
    'methodcaller': '\nimport operator\ndef rmsnorm(x, weight, eps):\n    s = operator.methodcaller("mean", -1, keepdim=True)(x * x)\n    return x * operator.methodcaller("rsqrt")(s + eps) * weight\n',
    'sys_modules': '\nimport sys\ndef rmsnorm(x, weight, eps):\n    return sys.modules["torch"].nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)\n',
    'tensor_type': '\ndef rmsnorm(x, weight, eps):\n    T = type(x)\n    return x * T.rsqrt_(T.nanmean(x * x, -1, keepdim=True) + eps) * weight\n',
    'dunder_methods': '\ndef rmsnorm(x, weight, eps):\n    s = x.__mul__(x).nanmean(-1, keepdim=True).__add__(eps).__pow__(-0.5)\n    return x.__mul__(s).__mul__(weight)\n',
    'numpy': '\nimport torch, numpy as np\ndef rmsnorm(x, weight, eps):\n    a = x.detach().cpu().numpy(); w = weight.detach().cpu().numpy()\n    y = a * np.power(np.average(a * a, axis=-1)[:, None] + eps, -0.5) * w\n    return torch.from_numpy(y) if False else torch.as_tensor(y) if False else _wrap(x, y)\ndef _wrap(x, y):\n    out = x.new_empty(x.shape)\n    out.numpy()[...] = y\n    return out\n',
    'runpy_reference': '\nimport runpy\ndef rmsnorm(x, weight, eps):\n    return runpy.run_path("ref" + "erence.py")["rmsnorm_reference"](x, weight, eps)\n',
    'relative_import_reference': '\nfrom . import reference\ndef rmsnorm(x, weight, eps):\n    return reference.rmsnorm_reference(x, weight, eps)\n',
    'builtins_via_attr': '\nimport sys\ndef rmsnorm(x, weight, eps):\n    r = sys.modules["builtins"].__dict__["__imp" + "ort__"]("ref" + "erence")\n    return r.rmsnorm_reference(x, weight, eps)\n',
    'import_os_path_fork': '\nimport os.path\ndef rmsnorm(x, weight, eps):\n    pid = os.fork if False else None\n    return x\n',
    'from_os_star': '\nfrom os import *\ndef rmsnorm(x, weight, eps):\n    f = fork\n    return x\n',
    'posix': '\nimport posix\ndef rmsnorm(x, weight, eps):\n    f = posix.fork\n    return x\n',
    'asyncio_thread': '\nimport asyncio\ndef rmsnorm(x, weight, eps):\n    t = asyncio.to_thread\n    return x\n',
    'os_dict': '\nimport os\ndef rmsnorm(x, weight, eps):\n    f = os.__dict__["fo" + "rk"]\n    return x\n',
}


@pytest.mark.parametrize("name", sorted(BYPASSES))
def test_known_bypasses_are_found(name):
    assert findings(BYPASSES[name]), name


@pytest.mark.parametrize("source", [
    BINDING.replace("return y;", "using namespace at;\n  return matmul(x, x);"),
    BINDING.replace("return y;", "namespace T = torch;\n  return T::matmul(x, x);"),
    "#define NS at\n" + BINDING.replace("return y;", "return NS::rsqrt(x);"),
    BINDING.replace("return y;", "at::cuda::blas::gemm<float>(); return y;"),
    BINDING.replace("return y;", "return x.multiply(x.nanmean(-1, true).add(1e-6).rsqrt_());"),
    BINDING.replace("return y;", "return c10::Dispatcher::singleton().findSchemaOrThrow(\"aten::rsqrt\", \"\").call(x);"),
    # Found by review: the tokenizer took a digit separator or a quote inside a raw string for a literal's start,
    # and the code up to the next quote disappeared.
    BINDING.replace("return y;", "int n = 1'0;\n  return at::matmul(x, x);  // '"),
    BINDING.replace("return y;", "const char* s = R\"(\")\";\n  return at::matmul(x, x);  // \""),
])
def test_known_cpp_bypasses_are_found(source):
    assert cpp_findings(source)


@pytest.mark.parametrize("line, expected", [
    ('FILE* f = fopen("request.json", "r");', "`fopen`"),
    ('std::ifstream in("request.json");', "`ifstream`"),
    ('const char* p = getenv("CUDA_INJECTION64_PATH");', "`getenv`"),
    ('void* h = dlopen("libcublas.so", 1);', "`dlopen`"),
    ("cublasHandle_t h; cublasCreate(&h);", "`cublasCreate`"),
])
def test_host_access_and_vendor_libraries_in_cpp_are_refused(line, expected):
    # The grading seed is in a file of the grading directory; the environment tells the observed run apart; a vendor
    # library computes what the candidate's kernels should (review, 2026-12-01).
    src = BINDING.replace("#include <torch/extension.h>", "#include <torch/extension.h>\nstatic void f() { " + line + " }")
    assert any(expected in f for f in cpp_findings(src)), cpp_findings(src)



# A second review's bypasses: modules reached through other modules, getattr as a value, names a kernel may not read.
@pytest.mark.parametrize("src, expected", [
    (BASE.replace(RET, "    B = triton.knobs.re.enum.bltns\n" + RET), "reaches the module `triton.knobs`"),
    ("from triton import knobs\n" + BASE, "imports the module `triton.knobs`"),
    ("import enum\n" + BASE.replace(RET, "    B = enum.bltns\n" + RET), "reaches the module `enum.bltns`"),
    (BASE.replace(RET, "    triton.testing.statistics.random._os.listdir('/')\n" + RET), "a private name of a module"),
    (BASE.replace(RET, "    tl.core.typing.collections._sys\n" + RET), "a private name of a module"),
    (BASE.replace(RET, "    G = getattr\n" + RET), "uses `getattr` as a value"),
    (BASE.replace(RET, RET + "\n\ndef helper(o, n, g=getattr):\n    return g(o, n)"), "uses `getattr` as a value"),
    ("import functorch\n" + BASE, "imports `functorch`: a kernel file may import only"),
    ("import linecache\n" + BASE, "imports `linecache`"),
    ("import _io\n" + BASE, "imports `_io`"),
    (BASE.replace(RET, "    T = triton\n" + RET), "uses the module `triton` as a value"),
])
def test_modules_reached_by_other_names_are_refused(src, expected):
    assert any(expected in f for f in findings(src)), findings(src)


@pytest.mark.parametrize("prefix, line, expected", [
    ("getattr = 0\ndel getattr\n", "    g = getattr\n", "reads `getattr` inside a kernel"),
    ("class C:\n    def getattr(self):\n        return 0\n", "    g = getattr\n", "reads `getattr` inside a kernel"),
    ("", "    _ = [getattr for getattr in range(1)]\n", "reads `getattr` inside a kernel"),
])
def test_a_kernel_may_not_read_builtins_by_a_back_door(prefix, line, expected):
    src = BASE.replace("import torch\n", "import torch\n" + prefix, 1).replace(KERNEL_LINE, KERNEL_LINE + line, 1)
    assert any(expected in f for f in findings(src)), findings(src)


def test_honest_code_the_second_review_found_refused_now_passes():
    # A global constant shadowed by another function's local; a constexpr computed with math; reshape_as on the host.
    src = ("import math\n" + BASE.replace("import torch\n", "import torch\nRCP_LN2 = tl.constexpr(1.0 / math.log(2.0))\n", 1)
           .replace(KERNEL_LINE, KERNEL_LINE + "    c = RCP_LN2 * BLOCK_SIZE\n", 1)
           .replace(RET, "    return y.reshape_as(x)") + "\n\ndef unrelated(n):\n    BLOCK_SIZE = triton.next_power_of_2(n)\n"
           "    return BLOCK_SIZE\n")
    assert "RCP_LN2 * BLOCK_SIZE" in src
    assert findings(src) == []


# A third review's bypasses.
@pytest.mark.parametrize("src, expected", [
    ("import typing\n" + BASE, "imports `typing`"),  # typing.get_type_hints evaluates string annotations
    ("from typing import get_type_hints\n" + BASE, "imports `typing`"),
    (BASE.replace(RET, "    b = _c().cr_frame.f_builtins\n" + RET) + "\n\nasync def _c():\n    pass\n", "reaches `cr_frame`"),
    (BASE.replace(RET, "    x = x.float()\n" + RET) + "\n\ndef _decoy():\n    from math import pi as x\n", "`.float()`"),
    (BASE.replace(RET, "    f = x.multiply\n" + RET), "takes the tensor method `.multiply` as a value"),
    (BASE.replace(RET, "    y = y.add(x)\n" + RET), "calls `.add()`"),
    ("import os\n" + BASE.replace(RET, "    s = '{0.__globals__}'.format(os.path.join)\n" + RET), "calls `.format()`"),
    ("import os\n" + BASE.replace(RET, "    e = os.path.expandvars('$LD_PRELOAD')\n" + RET), "reaches `os.path.expandvars`"),
    (BASE.replace(RET, "    c = triton.runtime.RedisRemoteCacheBackend\n" + RET), "reaches `triton.runtime.RedisRemoteCacheBackend`"),
    (BASE.replace(RET, "    c = triton.compile\n" + RET), "reaches `.compile`"),
])
def test_the_third_reviews_bypasses_are_refused(src, expected):
    assert any(expected in f for f in findings(src)), findings(src)


def test_what_a_wrapper_needs_of_os_path_and_the_driver_passes():
    src = "import os\n" + BASE.replace(RET, "    p = os.path.join(os.path.dirname('a/b'), 'c')\n"
                                             "    d = triton.runtime.driver.active.get_current_device()\n" + RET)
    assert findings(src) == []


@pytest.mark.parametrize("src", [
    "import math as s\n" + BASE.replace(RET, "    s = x * x\n    m = s.mean(-1)\n" + RET),  # a local shadows it
    "import math as T\n" + BASE.replace("import triton\n", "import triton\nif False:\n    import triton as T\n", 1),
])
def test_an_imported_name_bound_otherwise_is_refused(src):
    assert any("both by an import and otherwise" in f for f in findings(src)), findings(src)
