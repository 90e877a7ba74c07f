"""The static provenance check (kernelgym/grader/provenance.py): its rules registry, run rule by rule (each rule's
example is refused by that rule, its honest twin passes); the built-in baselines and the repo's honest kernels pass;
every bypass earlier reviews found is refused; the names it resolves against exist in the installed Triton."""
import glob
import types
from pathlib import Path

import pytest

from kernelgym.discovery import discover_tasks, get_task
from kernelgym.grader import provenance
from kernelgym.grader.provenance import RULES, check_files, check_source

ROOT = Path(__file__).resolve().parent.parent
TASK = get_task("triton-rmsnorm")
BASE = (TASK.root / "kernel.py").read_text()
RET = "    return y.reshape(x.shape)"
KERNEL_LINE = "    row = tl.program_id(0)\n"


def findings(src):
    return [str(f) for f in check_source({"kernel.py": src}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")]


def rules(src):
    return {f.rule for f in check_source({"kernel.py": src}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")}


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_each_rule_refuses_its_example_and_passes_its_honest_twin(rule):
    bad = check_files({"kernel.py": rule.example.encode()}, "kernel.py:run", "reference.py:ref", 4 << 20)
    good = check_files({"kernel.py": rule.honest.encode()}, "kernel.py:run", "reference.py:ref", 4 << 20)
    assert rule.name in {f["rule"] for f in bad["source_errors"] + bad["findings"]}, bad
    assert good == {"source_errors": [], "findings": []}, good
    assert (ROOT / rule.attack).is_file(), rule.attack


def test_every_finding_names_a_rule_of_the_registry():
    src = BASE.replace(RET, "    import math\n    return x @ getattr(x, 'T').__class__")
    found = check_source({"kernel.py": src}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")
    assert found and all(f.rule in provenance.RULE_NAMES for f in found), found


@pytest.mark.parametrize("name", sorted(discover_tasks()))
def test_every_built_in_baseline_passes(name):
    task = get_task(name)
    # Python files only: some CUDA tasks' baselines are ATen calls, the starting point the agent replaces.
    files = {f: (task.root / f).read_bytes() for f in task.spec.editable_files if f.endswith(".py")}
    assert check_files(files, task.spec.entry_point, task.spec.reference, 4 << 20) == \
        {"source_errors": [], "findings": []}


@pytest.mark.parametrize("path", sorted(glob.glob(str(ROOT / "tests" / "kernels" / "*.py"))), ids=lambda p: Path(p).name)
def test_the_repos_honest_kernels_pass(path):
    found = check_source({"kernel.py": Path(path).read_text()}, "kernel.py:none", "reference.py:ref")
    assert [f for f in found if f.rule != "entry_point_fixed"] == []  # their entry points differ by task


@pytest.mark.parametrize("source, rule", [
    (BASE.replace(RET, "    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps))"),
     "module_names_allowed"),
    ("import torch.nn.functional as F\n" + BASE.replace(RET, "    return F.rms_norm(x, (x.shape[-1],), weight, eps)"),
     "imports_allowed"),
    ("from torch import nn\n" + BASE, "imports_allowed"),
    ("from torch import rsqrt as r\n" + BASE, "imports_allowed"),
    ("import torch as T\n" + BASE.replace(RET, "    return T.ops.aten.mul(x, 2)"), "module_names_allowed"),
    (BASE.replace(RET, "    return getattr(torch, 'rs' + 'qrt')(x)"), "refused_names"),
    (BASE.replace("import torch\n", "import torch\nfrom reference import rmsnorm_reference\n"), "imports_allowed"),
    (BASE.replace(RET, "    return _helper(x)\n\ndef _helper(x):\n    return x.sum(-1)"), "host_methods_allowed"),
    (BASE.replace(RET, "    return x @ weight"), "no_matmul_operator"),
    (BASE.replace(RET, "    exec('y = x')\n    return y"), "refused_names"),
    ("import kernelgym_inputs\n" + BASE, "imports_allowed"),  # the harness's name for the reference
    (BASE + "\n\ndef _debug(x):\n    return x.sum()\n", "host_methods_allowed"),  # a helper nobody calls
    (BASE + "\n_W = torch.matmul(torch.ones(2, 2), torch.ones(2, 2))\n", "module_names_allowed"),
    (BASE.replace(RET, "    return torch.Tensor.mean(x, -1)"), "module_names_allowed"),
    (BASE.replace(RET, "    _k = x.item()\n" + RET), "host_methods_allowed"),
    (BASE.replace(RET, "    f = x.multiply\n" + RET), "host_values_allowed"),
    (BASE.replace(RET, "    y = y.add(x)\n" + RET), "host_methods_allowed"),
    ("import os\n" + BASE.replace(RET, "    s = '{0.__globals__}'.format(os.path.join)\n" + RET), "host_methods_allowed"),
    ("import os\n" + BASE.replace(RET, "    e = os.path.expandvars('$LD_PRELOAD')\n" + RET), "module_names_allowed"),
    (BASE.replace(RET, "    c = triton.runtime.RedisRemoteCacheBackend\n" + RET), "module_names_allowed"),
    (BASE.replace(RET, "    c = triton.compile\n" + RET), "module_names_allowed"),
    (BASE.replace(RET, "    T = triton\n" + RET), "module_names_allowed"),
    (BASE.replace(RET, "    B = triton.knobs.re.enum.bltns\n" + RET), "module_names_allowed"),
    ("from triton import knobs\n" + BASE, "imports_allowed"),
    (BASE.replace(RET, "    tl.core.typing.collections._sys\n" + RET), "module_names_allowed"),
    (BASE.replace(RET, "    G = getattr\n" + RET), "refused_names"),
    ("import typing\n" + BASE.replace(RET, "    h = typing.get_type_hints\n" + RET), "module_names_allowed"),
    (BASE.replace(RET, "    b = _c().cr_frame.f_builtins\n" + RET), "no_introspection"),
    ("import os\n" + BASE.replace(RET, "    _ = os.sys.modules['kernelgym_inputs']\n" + RET), "module_names_allowed"),
    ("import os\n" + BASE.replace(RET, "    _ = os.environ.get('CUDA_INJECTION64_PATH')\n" + RET), "module_names_allowed"),
    ("from os import getenv\n" + BASE, "imports_allowed"),
    ("_F = open('/tmp/triton-cache/x.so', 'wb')\n" + BASE, "refused_names"),
    ("import os\n_D = os.path.dirname(__file__)\n" + BASE, "refused_names"),
    (BASE.replace("import triton\n", "import triton\ntriton.jit = lambda f: f\n", 1), "module_names_allowed"),
    ("import math as s\n" + BASE.replace(RET, "    s = x * x\n    m = s.mean(-1)\n" + RET), "import_names_not_rebound"),
    ("import math as T\n" + BASE.replace("import triton\n", "import triton\nif False:\n    import triton as T\n", 1),
     "import_names_not_rebound"),
])
def test_pytorch_doing_the_work_is_refused_by_its_rule(source, rule):
    assert rule in rules(source), findings(source)


@pytest.mark.parametrize("prefix", ["import subprocess\n", "import threading\n", "import gc\n", "import ctypes\n",
                                    "import pathlib\n", "import base64\n", "import numpy\n", "import sys\n",
                                    "import functorch\n", "import linecache\n", "import _io\n", "import posix\n",
                                    "import antigravity\n", "from . import reference\n", "from os import *\n"])
def test_process_file_and_memory_modules_are_not_importable(prefix):
    assert "imports_allowed" in rules(prefix + BASE), findings(prefix + BASE)


@pytest.mark.parametrize("prefix, line, rule", [
    ("", "    from reference import rmsnorm_reference\n", "kernel_statements"),
    ("", "    global _ARGS\n", "kernel_statements"),
    ("_ARGS = []\n", "    _ARGS[2].copy_(_ARGS[0])\n", "kernel_names"),
    ("_LATER = 1\nif True:\n    _LATER = []\n", "    _LATER.copy_(x_ptr)\n", "kernel_names"),
    ("", "    torch.ones(1)\n", "module_names_allowed"),
    ("", "    open('x', 'w')\n", "refused_names"),
    ("", "    tl.__dict__\n", "no_introspection"),
    ("", "    h = x_ptr.handle\n", "kernel_attributes"),
    ("", "    n = [i for i in range(3)]\n", "kernel_statements"),
    ("", "    f = lambda v: v\n", "kernel_statements"),
    ("getattr = 0\ndel getattr\n", "    g = getattr\n", "refused_names"),
    ("", "    s = _host(x_ptr)\n", "kernel_names"),  # a plain function of the file's: Python, not Triton
])
def test_a_kernel_body_is_held_to_what_triton_compiles(prefix, line, rule):
    src = BASE.replace("import torch\n", "import torch\n" + prefix, 1).replace(KERNEL_LINE, KERNEL_LINE + line, 1)
    src += "\n\ndef _host(v):\n    return v\n"
    assert src.count(line) == 1
    assert rule in rules(src), findings(src)


def test_what_triton_compiles_in_a_kernel_body_passes():
    # Methods of the kernel's own values on any expression, builtins, tl.constexpr globals, the file's jit helpers.
    helper = "@triton.jit\ndef _twice(v):\n    return v * 2\n\n\n"
    src = BASE.replace("import torch\n", "import torch\nimport math\nSCALE: tl.constexpr = 1\nSHIFT = tl.constexpr(0)\n"
                                          "FACTOR = -2.0\nDTYPE = tl.float16\nRCP_LN2 = tl.constexpr(1.0 / math.log(2.0))\n", 1)
    src = src.replace("@triton.jit\ndef rmsnorm_kernel", helper + "@triton.jit\ndef rmsnorm_kernel", 1).replace(
        KERNEL_LINE, KERNEL_LINE + "    k = (_twice(row) + SCALE * SHIFT * FACTOR * RCP_LN2).to(DTYPE)\n"
                                   "    for i in range(min(2, 3)):\n        k += i\n"
                                   "    t = x_ptr.dtype.element_ty\n    e = tl.math.exp2(k.to(tl.float32))\n", 1)
    assert "_twice(row)" in src
    assert findings(src) == []


def test_a_constexpr_function_a_kernel_calls_is_host_code_and_checked():
    # Triton runs a @triton.constexpr_function on the host while it compiles the kernel that calls it.
    src = BASE.replace("@triton.jit\ndef rmsnorm_kernel", "@triton.constexpr_function\ndef pick(n):\n"
                       "    return open('reference.py').read()\n\n\n@triton.jit\ndef rmsnorm_kernel", 1).replace(
        KERNEL_LINE, KERNEL_LINE + "    B2: tl.constexpr = pick(BLOCK_SIZE)\n", 1)
    assert "refused_names" in rules(src), findings(src)
    assert findings(src.replace("open('reference.py').read()", "n * 2")) == []


def test_what_a_wrapper_needs_of_os_path_typing_and_the_driver_passes():
    src = "import os\nfrom typing import Optional\n" + BASE.replace(
        RET, "    p = os.path.join(os.path.dirname('a/b'), 'c')\n"
             "    d = triton.runtime.driver.active.get_current_device()\n"
             "    n = torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.is_available() else 1\n"
             "    o: Optional[int] = None\n" + RET)
    assert findings(src) == []


def test_honest_host_code_passes():
    # A guard on __name__, a class of the file's own, a grid lambda, autotune configs, a module-level constant.
    src = BASE + (
        "\n\nclass _Plan:\n    def __init__(self, n):\n        self.n = n\n\n    def __call__(self):\n"
        "        return self.n\n\n\nGRID = lambda meta: (triton.cdiv(4, meta['BLOCK']),)\n"
        "\n\n@triton.autotune(configs=[triton.Config({'BLOCK': 64}, num_warps=4)], key=['n'])\n@triton.jit\n"
        "def _tuned(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n\n\nif __name__ == '__main__':\n"
        "    print(_Plan(3)())\n")
    assert findings(src) == []


def test_the_allowed_names_exist_in_the_installed_triton_and_are_no_modules():
    import triton.language as tl
    import importlib
    for namespace, names in provenance.MODULE_NAMES.items():
        if not namespace.startswith("triton.language"):
            continue
        module = importlib.import_module(namespace)
        for name in names:
            if f"{namespace}.{name}" in provenance.MODULE_NAMES:  # a namespace: a module, checked as its own entry
                continue
            value = getattr(module, name)  # raises where a listed name is gone
            assert not isinstance(value, types.ModuleType), f"{namespace}.{name} is a module"
    assert "handle" not in provenance._names.TL_TENSOR_ATTRIBUTES and "data" not in provenance._names.TL_TENSOR_ATTRIBUTES
    assert hasattr(tl.core.tensor, "to")


def test_the_check_is_linear_in_the_files_size():
    # Nested classes made the earlier check quadratic (98 levels, 1 MB: 390 s): here twice the size is about twice
    # the work, counted in visited nodes, not timed.
    nested = "".join("    " * i + f"class C{i}:\n" for i in range(98)) + "    " * 98 + "x = 1\n"
    import ast
    counts = []
    for n in (20, 40):
        tree = ast.parse(BASE + nested * n)
        checker = provenance._FileChecker("kernel.py", tree, "rmsnorm", {"kernel", "reference"})
        visited = [0]
        visit = checker._visit

        def counting(node, ctx, visit=visit):
            visited[0] += 1
            return visit(node, ctx)
        checker._visit = counting
        assert checker.run() == []
        counts.append(visited[0])
    assert counts[1] < 2.2 * counts[0], counts


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


# The bypasses a review found at commit 7e21f50, in the static check's part (the dynamic check's and the harness's
# are in tests/attacks/): code reached through decorators, classes, a self-import, a swapped entry point, numpy.
REVIEW_4 = {
    "function_handed_to_a_decorator": "import torch\nH = {}\ndef reg(f):\n    H[0] = f\n    return f\n@reg\n"
        "def _t(x, w, e):\n    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, e)\n"
        "def rmsnorm(x, weight, eps):\n    return H[0](x, weight, eps)\n",
    "decorated_class": "import torch\ndef keep(c):\n    return c()\n@keep\nclass _K:\n    def __call__(self, x):\n"
        "        return torch.nn.functional.silu(x)\ndef rmsnorm(x, weight, eps):\n    return _K(x)\n",
    "module_getattr": "def rmsnorm(x, weight, eps):\n    return x\ndel rmsnorm\ndef __getattr__(n):\n    return 0\n",
    "self_import_chain": "import kernel\ndef rmsnorm(x, weight, eps):\n    return kernel.torch.nn.functional.silu(x)\n",
    "from_self_import": "from kernel import helper as h\ndef rmsnorm(x, weight, eps):\n    return h(x)\n",
    "numpy_through_handle": "import triton\n@triton.jit\ndef k(x_ptr):\n    a = x_ptr.handle.data\n"
        "def rmsnorm(x, weight, eps):\n    k[(1,)](x)\n    return x\n",
}


@pytest.mark.parametrize("name", sorted(REVIEW_4))
def test_the_fourth_reviews_static_bypasses_are_refused(name):
    assert findings(REVIEW_4[name]), name


