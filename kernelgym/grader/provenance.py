"""Static provenance check: the candidate's files must leave the computing to its own kernels.

Run on the editable files copied into the grading directory, before any candidate code runs, in a sandboxed process
of its own under a time limit (`kernelgym/grader/static_check.py`; ``python provenance.py IN OUT`` is that process's
entry point). It reads syntax trees only: nothing the candidate names is imported, evaluated or run, and names are
resolved against lists known ahead (`allowed_names.py` and the tables below), never against installed modules.

The whole file is judged, not what is reachable by name from the entry point: every function, class, decorator,
default, annotation and module-level statement of every editable Python file is held to the rules of `RULES`, a
registry of named rules, each with what it refuses, why, an example it refuses and an honest twin it lets pass
(tests/test_provenance.py runs every one), and the attack file that grades the attack end to end. Functions decorated
with ``triton.jit``/``autotune``/``heuristics`` are kernels, held to what Triton compiles (on the CPU interpreter a
kernel's body runs as Python); everything else is host code, which may allocate, view, reshape and launch, and call
nothing that computes. The check is one pass over each tree (an explicit stack, no recursion): linear in the file's
size.

What it cannot see, a tensor expression on the host (``y[:] = x * w``, ``out[...] = w[ids]``), is for the dynamic
check of the harness where no outside observer runs (every PyTorch operator of a checked call is recorded), and for
the outside observer on NVIDIA GPUs. C++ and CUDA sources (`check_cpp_source`) are read as tokens.

Standard library only: this file is loaded by path in the check's sandbox, with `allowed_names.py` beside it.
"""
from __future__ import annotations

import ast
import builtins
import importlib.util
import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path


def _sibling(name: str):
    """The module ``<name>.py`` beside this file, loaded by path (the check's sandbox imports no kernelgym)."""
    spec = importlib.util.spec_from_file_location(f"kernelgym_static_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_names = _sibling("allowed_names")

#: torch attributes host code may use: allocation, dtypes, devices, shapes, streams and events.
TORCH_ALLOWED = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "Tensor", "Size", "dtype", "device", "Generator", "cuda", "float16", "half", "bfloat16", "float32", "float",
    "float64", "double", "int8", "uint8", "int16", "int32", "int64", "long", "int", "bool", "float8_e4m3fn",
    "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "is_tensor", "is_floating_point", "finfo", "iinfo",
    "get_default_dtype", "no_grad", "inference_mode", "Stream", "Event",
})
#: torch.cuda attributes allowed (streams, devices, properties).
TORCH_CUDA_ALLOWED = frozenset({
    "current_stream", "default_stream", "stream", "Stream", "Event", "current_device", "device", "get_device_properties",
    "get_device_capability", "is_available", "device_count", "synchronize",
})
#: Every module a kernel file may import or reach, and what of each: ``namespace -> names``. A name that is itself a
#: key here is a namespace (a module), reached only through its own names; every other name is a leaf, the end of a
#: chain. A chain of attributes rooted at an imported name is resolved against this table and nothing else.
MODULE_NAMES: dict[str, frozenset[str]] = {
    "torch": TORCH_ALLOWED,
    "torch.cuda": TORCH_CUDA_ALLOWED,
    "triton": frozenset({"jit", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2", "language", "runtime",
                         "constexpr_function"}),
    "triton.runtime": frozenset({"driver"}),
    "triton.runtime.driver": frozenset({"active"}),
    "triton.runtime.driver.active": frozenset({"get_current_device", "get_current_target", "utils"}),
    "triton.runtime.driver.active.utils": frozenset({"get_device_properties"}),
    "triton.language": _names.TL_NAMES | {"math", "extra"},
    "triton.language.math": _names.TL_MATH_NAMES,
    "triton.language.extra": frozenset({"libdevice", "cuda", "hip"}),
    "triton.language.extra.libdevice": _names.LIBDEVICE_NAMES,
    "triton.language.extra.cuda": _names.TL_EXTRA_CUDA_NAMES | {"libdevice"},
    "triton.language.extra.cuda.libdevice": _names.CUDA_LIBDEVICE_NAMES,
    "triton.language.extra.hip": _names.TL_EXTRA_HIP_NAMES | {"libdevice"},
    "triton.language.extra.hip.libdevice": _names.HIP_LIBDEVICE_NAMES,
    "math": _names.MATH_NAMES,
    "os": frozenset({"path"}),
    "os.path": frozenset({"join", "basename", "dirname", "splitext", "split", "normpath", "sep"}),
    "typing": frozenset({"Optional", "Union", "Tuple", "List", "Dict", "Any", "Sequence"}),
    "__future__": frozenset({"annotations"}),
}
#: Methods host code may call on anything that is not a module: allocation, views, shapes, and Python's containers.
#: Every other method call is refused (a deny-list of computing tensor methods cannot keep up with PyTorch).
METHOD_ALLOWED = frozenset({
    "view", "reshape", "contiguous", "stride", "size", "numel", "dim", "data_ptr", "is_contiguous", "element_size",
    "new_empty", "new_zeros", "new_ones", "new_full", "unsqueeze", "squeeze", "flatten", "view_as", "expand",
    "expand_as", "reshape_as", "permute", "transpose", "t", "narrow", "select", "unbind", "split", "chunk",
    "storage_offset", "get_device", "fill_", "zero_", "is_floating_point", "__init__",
    "append", "extend", "insert", "get", "items", "keys", "values", "setdefault", "pop", "update", "join",
    "startswith", "endswith", "lower", "upper", "strip", "index", "count", "copy", "run", "warmup",
})
#: Tensor attributes host code may read as values: properties, not methods.
TENSOR_PROPERTIES = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "itemsize", "T", "mT", "layout",
                               "is_floating_point", "is_signed", "names", "requires_grad", "nbytes", "type",
                               "index", "value", "multi_processor_count", "total_memory", "major", "minor", "name"})
#: Attribute names host code may never read as values, even where the file assigns them: the interpreter's arrays
#: behind a Triton value and what numpy hangs off them.
HOST_VALUES_REFUSED = frozenset({"handle", "data", "ctypes", "base", "pythonapi"})
#: Builtins and module globals refused as names anywhere: they run code built at run time, reach the host's files,
#: or take an object apart (what the check reads by name they would hide).
REFUSED_NAMES = frozenset({
    "exec", "eval", "compile", "__import__", "globals", "locals", "vars", "getattr", "setattr", "delattr", "hasattr",
    "dir", "type", "open", "input", "breakpoint", "memoryview", "id", "help", "exit", "quit", "copyright", "credits",
    "license", "repr", "ascii", "format", "__build_class__", "__builtins__", "__loader__", "__spec__", "__file__", "__cached__", "classmethod",
    "staticmethod", "property",
})
#: Python's builtins, read off this process's own `builtins` module (no candidate module is imported for it).
BUILTIN_NAMES = frozenset(dir(builtins))
#: Dunder names host code may read (``if __name__ == "__main__":``).
DUNDER_NAMES_ALLOWED = frozenset({"__name__"})
#: Dunder attributes any code may reach; every other one takes an object apart (its class, globals, frame).
DUNDER_ATTRIBUTES_ALLOWED = frozenset({"__init__", "__name__", "__doc__"})
#: Attributes that reach a frame or a code object without dunders: refused anywhere.
FRAME_ATTRIBUTES = frozenset({"_getframe", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace",
                              "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame",
                              "ag_code", "ag_await", "tb_frame", "tb_next"})
#: Methods a class of the candidate's may define under a dunder name (the rest change how Python or torch treats an
#: object: ``__torch_function__``, ``__getattr__``, ``__del__``).
CLASS_DUNDERS_ALLOWED = frozenset({"__init__", "__call__", "__repr__"})
#: Decorators a function may carry (resolved through the imports): Triton's. ``constexpr_function`` marks host code
#: Triton runs while compiling; the others make a kernel.
KERNEL_DECORATORS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})
DECORATORS_ALLOWED = KERNEL_DECORATORS | {"triton.constexpr_function"}
#: The modules a kernel body may reach (torch in a kernel's body would compute with PyTorch on the interpreter).
KERNEL_MODULES = ("triton", "math")
#: Builtins a kernel body may call: Triton's frontend accepts these.
KERNEL_BUILTINS = frozenset({"range", "min", "max", "len", "int", "float", "bool", "abs", "print", "isinstance",
                             "tuple", "list", "zip", "enumerate"})
#: Kernel builtins that turn a value into Python's own (on the interpreter, a Triton block's numbers): in a kernel
#: body only over constants (``float("-inf")``).
KERNEL_CONVERSIONS = frozenset({"int", "float", "bool", "tuple", "list"})
#: The statements and expressions a kernel body may hold: what Triton's frontend compiles. Nested functions,
#: classes, lambdas, comprehensions, imports, ``global``, ``try`` and ``with`` are Python only the interpreter runs.
KERNEL_NODES = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.If, ast.For, ast.While, ast.Return, ast.Pass,
                ast.Break, ast.Continue, ast.Assert, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Compare,
                ast.Call, ast.Constant, ast.Attribute, ast.Subscript, ast.Name, ast.List, ast.Tuple, ast.Slice,
                ast.Starred, ast.keyword, ast.expr_context, ast.operator,
                ast.boolop, ast.unaryop, ast.cmpop)


@dataclass(frozen=True)
class Rule:
    """One rule of the static check: what it refuses and why, an example it refuses and an honest twin it passes
    (each a whole ``kernel.py`` whose entry point is ``run``, reference ``reference.py``), and the attack file that
    grades the attack end to end."""

    name: str
    refuses: str
    rationale: str
    example: str
    honest: str
    attack: str


_H = "import torch\nimport triton\nimport triton.language as tl\n\n"
_K = ("@triton.jit\ndef copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
      "    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)\n\n\n")
_RUN = "def run(x):\n    y = torch.empty_like(x)\n    copy_kernel[(1,)](x, y, x.numel(), BLOCK=1024)\n    return y\n"

RULES: tuple[Rule, ...] = (
    Rule("source_readable", "a file with a NUL byte, invalid UTF-8, or over the size cap (fails compile)",
         "Python 3.10 raises ValueError on a NUL byte where 3.11 raises SyntaxError, and a replaced byte would make the "
         "checked text differ from what Python imports: the bytes are judged before anything parses them",
         _H + _K + _RUN + "\x00\n", _H + _K + _RUN, "tests/attacks/unreadable_source.py"),
    Rule("imports_allowed", "imports of anything but torch, triton, math, os.path, typing and __future__ (the "
         "candidate's own module, the reference, numpy, the standard library)",
         "an allow-list: a deny-list cannot keep up with the standard library (linecache reads files) and "
         "``import kernel`` from kernel.py hands out its module's names unchecked; a name is never resolved by "
         "importing it (``import antigravity`` ran a browser from the trusted process)",
         "import kernel\n" + _H + _K + _RUN.replace("    return y", "    return kernel.helper(y)"), _H + _K + _RUN,
         "tests/attacks/self_import_helper.py"),
    Rule("imports_at_module_level", "an import inside a function, a class or a statement",
         "an import binds a module name in its own scope; at module level, the check knows every name's module",
         _H + _K + _RUN.replace("    return y", "    import math\n    return y"), _H + _K + _RUN,
         "tests/attacks/self_import_helper.py"),
    Rule("import_names_not_rebound", "a name bound by an import and also otherwise anywhere in the file",
         "the check reads an imported name as that module everywhere; a local ``s = x * x`` under ``import math as "
         "s`` would make ``s.mean()`` a module call",
         "import math as s\n" + _H + _K + _RUN.replace("    return y", "    s = x * x\n    return s.mean(-1)"),
         _H + _K + _RUN, "tests/attacks/self_import_helper.py"),
    Rule("module_names_allowed", "a chain of attributes on a module that leaves the allow-list (torch compute, "
         "``triton.knobs``, ``os.sys.modules``), a module as a value, or an assignment into a module",
         "modules import other modules, which are then their attributes: only names listed ahead are reached",
         _H + _K + _RUN.replace("    return y", "    return torch.nn.functional.silu(x)"), _H + _K + _RUN,
         "tests/attacks/pytorch_fallback_no_launch.py"),
    Rule("refused_names", "builtins that run built code, reach files or take objects apart (exec, eval, getattr, "
         "type, open, __import__, ...) and dunder globals",
         "what these reach cannot be read off the syntax tree",
         _H + _K + _RUN.replace("    return y", "    return getattr(x, 'ex' + 'p')()"), _H + _K + _RUN,
         "tests/attacks/reference_through_os_sys_modules.py"),
    Rule("no_introspection", "dunder attributes (``__class__``, ``__globals__``, ``__dict__``) and frame attributes",
         "they reach a module's globals, builtins or the harness's frames from any object",
         _H + _K + _RUN.replace("    return y", "    return run.__globals__['torch'].exp(x)"), _H + _K + _RUN,
         "tests/attacks/reference_through_os_sys_modules.py"),
    Rule("host_methods_allowed", "a method call in host code outside allocation, views, shapes and containers",
         "an allow-list: PyTorch's computing methods are hundreds and grow",
         _H + _K + _RUN.replace("    return y", "    return x.multiply(2)"), _H + _K + _RUN,
         "tests/attacks/pytorch_fallback_no_launch.py"),
    Rule("host_values_allowed", "an attribute read as a value in host code that is neither a tensor's property "
         "(shape, dtype, device, ...) nor one the file itself assigns (``f = x.mul``, ``p.handle.data.ctypes``)",
         "an allow-list: a method taken as a value is called later by a plain name the method rule cannot judge, and "
         "a deny-list missed the interpreter's numpy arrays and the ctypes module behind them",
         _H + _K + _RUN.replace("    return y", "    f = x.multiply\n    return f(2)"),
         _H + _K + _RUN.replace("    return y", "    n = x.shape[-1] * x.dtype.itemsize\n    return y"),
         "tests/attacks/constexpr_function_reads_values.py"),
    Rule("unbound_names", "a name read that the file never binds and that is no builtin",
         "such a name can only hold what code outside the check put in the module's globals",
         _H + _K + _RUN.replace("    return y", "    return compute(x)"), _H + _K + _RUN,
         "tests/attacks/constexpr_function_reads_values.py"),
    Rule("no_matmul_operator", "``@`` in host code", "on tensors it is a PyTorch matmul",
         _H + _K + _RUN.replace("    return y", "    return x @ x"), _H + _K + _RUN,
         "tests/attacks/pytorch_fallback_no_launch.py"),
    Rule("decorators_triton_only", "a decorator other than triton.jit, autotune, heuristics and constexpr_function",
         "a decorator runs the function it is handed, and what it returns replaces it: a review hid PyTorch in a "
         "function handed to a decorator of its own",
         _H + _K + "def deco(f):\n    return f\n\n\n@deco\n" + _RUN, _H + _K + _RUN,
         "tests/attacks/decorated_helper_computes.py"),
    Rule("classes_plain", "a class with a decorator, a base that is not one of the file's own classes, a metaclass, "
         "or a dunder method other than __init__, __call__ and __repr__",
         "bases and dunders change how Python and torch treat an object (``__torch_function__``, ``__getattr__``)",
         _H + _K + "class T(torch.Tensor):\n    pass\n\n\n" + _RUN, _H + _K + "class Plan:\n    def __init__(self, n):"
         "\n        self.n = n\n\n\n" + _RUN, "tests/attacks/decorated_helper_computes.py"),
    Rule("no_dunder_bindings", "binding a dunder name (a module-level ``__getattr__``, ``__all__ = ...``)",
         "a module-level ``__getattr__`` hands the harness whatever it asks for, checked or not",
         _H + _K + _RUN + "\n\ndef __getattr__(name):\n    return run\n", _H + _K + _RUN,
         "tests/attacks/entry_point_swapped.py"),
    Rule("entry_point_fixed", "an entry point not defined exactly once at the top level, undecorated, or bound, "
         "deleted or declared global anywhere else",
         "the harness calls what the name holds when it imports the file: the function the check read must be it",
         _H + _K + _RUN + "\n\nrun = lambda x: x.exp()\n", _H + _K + _RUN, "tests/attacks/entry_point_swapped.py"),
    Rule("no_async", "async functions, await, async for and async with",
         "a coroutine's frame reaches builtins (``cr_frame.f_builtins``); a kernel wrapper has no use for them",
         _H + _K + _RUN + "\n\nasync def later():\n    pass\n", _H + _K + _RUN,
         "tests/attacks/decorated_helper_computes.py"),
    Rule("kernel_statements", "in a kernel body, Python Triton does not compile: nested defs, lambdas, "
         "comprehensions, imports, global, try, with", "on the CPU interpreter a kernel's body runs as Python",
         _H + _K.replace("    offs = ", "    import math\n    offs = ") + _RUN, _H + _K + _RUN,
         "tests/attacks/python_in_interpreted_kernel_body.py"),
    Rule("kernel_names", "in a kernel body, a name other than its parameters and locals, modules, the file's Triton "
         "functions, constant globals and the builtins Triton takes",
         "a module-level list of the wrapper's tensors read from a kernel body computes with torch on the interpreter",
         _H + "ARGS = []\n\n\n" + _K.replace("    offs = ", "    ARGS[0].copy_(ARGS[1])\n    offs = ") + _RUN,
         _H + "SCALE: tl.constexpr = 2\n\n\n" + _K.replace("    offs = ", "    s = SCALE\n    offs = ") + _RUN,
         "tests/attacks/python_in_interpreted_kernel_body.py"),
    Rule("kernel_attributes", "in a kernel body, an attribute outside Triton's own values' (``.handle``, ``.data``, "
         "a torch tensor's methods)", "on the interpreter ``.handle.data`` is the numpy array behind a Triton value",
         _H + _K.replace("    offs = ", "    h = x_ptr.handle.data\n    offs = ") + _RUN,
         _H + _K.replace("    offs = ", "    t = x_ptr.dtype.element_ty\n    offs = ") + _RUN,
         "tests/attacks/numpy_through_kernel_handle.py"),
)
RULE_NAMES = frozenset(r.name for r in RULES)


@dataclass(frozen=True)
class Finding:
    """One refused use: the file, line, the rule (a name of `RULES`) and what it is."""

    file: str
    line: int
    what: str
    rule: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what}" + (f" [{self.rule}]" if self.rule else "")


#: The finding for a file the parser itself cannot read (100,000 nested unary minuses make it raise MemoryError).
TOO_DEEP = "the file's syntax tree is nested too deeply for Python's parser; a kernel needs no such depth"


def _namespace_of(path: str) -> bool:
    return path in MODULE_NAMES


def _resolve(path: str, attrs: list[str]) -> tuple[str, str | None]:
    """Follow `attrs` from the module path `path` through `MODULE_NAMES`: (the path reached, None) where every step is
    listed, else (the path up to the refused step, why)."""
    for attr in attrs:
        if path not in MODULE_NAMES:
            return f"{path}.{attr}", f"`{path}` is no module here: nothing is reached through it"
        if attr not in MODULE_NAMES[path]:
            return f"{path}.{attr}", f"`{path}.{attr}` is not on the allow-list of `{path}`"
        path = f"{path}.{attr}"
    return path, None


@dataclass
class _Ctx:
    """Where a node stands: host code or a kernel body (with the names it may read), and in a class body."""

    kernel: bool = False
    names: frozenset[str] = frozenset()
    in_class: bool = False
    top: bool = False  # the module's own statements (imports belong there)
    scope: frozenset[str] = frozenset()  # names local to the enclosing functions, lambdas and comprehensions
    class_scope: frozenset[str] = frozenset()  # names the enclosing class body binds (seen in that body alone)
    constexprs: frozenset[str] = frozenset()  # a kernel's tl.constexpr parameters it never rebinds


_HOST = _Ctx()


class _FileChecker:
    """Every rule over one parsed file, in one pass over its tree."""

    def __init__(self, rel: str, tree: ast.Module, entry_fn: str | None, own_modules: set[str]):
        self.rel, self.tree, self.entry_fn, self.own_modules = rel, tree, entry_fn, own_modules
        self.findings: list[Finding] = []
        self.imports: dict[str, str] = {}  # local name -> the path it names ("tl" -> "triton.language")
        self._called: set[int] = set()  # ids of expressions that are called (`x.view(...)`)
        self._prepass()

    def add(self, node: ast.AST, rule: str, what: str) -> None:
        self.findings.append(Finding(self.rel, getattr(node, "lineno", 1), what, rule))

    # -- one walk over the tree: imports, bindings, constants ----------------------------------------------------
    def _prepass(self) -> None:
        tree = self.tree
        bound: dict[str, list[ast.AST]] = {}  # every binding of a name that is not an import, anywhere
        import_paths: dict[str, set[str]] = {}
        global_names: set[str] = set()
        walrus: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                bound.setdefault(node.id, []).append(node)
            elif isinstance(node, ast.arg):
                bound.setdefault(node.arg, []).append(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.setdefault(node.name, []).append(node)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                global_names.update(node.names)
                for n in node.names:
                    bound.setdefault(n, []).append(node)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                bound.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                bound.setdefault(node.rest, []).append(node)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self._check_import(node)
                for a in node.names:
                    if a.name == "*":
                        continue
                    if isinstance(node, ast.Import):
                        local = a.asname or a.name.split(".")[0]
                        path = a.name if a.asname else a.name.split(".")[0]
                    else:
                        local, path = a.asname or a.name, f"{node.module}.{a.name}"
                    import_paths.setdefault(local, set()).add(path)
            if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                walrus.add(node.target.id)
        for name, paths in import_paths.items():
            self.imports[name] = sorted(paths)[0]
            if len(paths) > 1 or name in bound:
                where = bound.get(name, [tree])[0]
                self.add(where, "import_names_not_rebound", f"binds `{name}` both by an import and otherwise (the "
                                                            f"check reads an imported name as that module everywhere)")
        self.bound = bound
        # Attribute names the file assigns (``self.n = n``) or binds in a class body: host code may read them back.
        self.own_attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                               and isinstance(n.ctx, ast.Store)}
        self.own_attributes |= {t.id for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for st in c.body
                                if isinstance(st, (ast.Assign, ast.AnnAssign))
                                for t in (st.targets if isinstance(st, ast.Assign) else [st.target])
                                if isinstance(t, ast.Name)}
        self.own_attributes |= {f.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body
                                if isinstance(f, ast.FunctionDef)}
        # The file's own functions and classes at module level, and the names a kernel may read of its globals.
        self.top_defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.top_classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        self.kernels = {name for name, fn in self.top_defs.items() if self._decorated(fn) & KERNEL_DECORATORS}
        self.constexpr_fns = {name for name, fn in self.top_defs.items()
                              if "triton.constexpr_function" in self._decorated(fn)}
        constant: dict[str, int] = {}
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if len(targets) == 1 and isinstance(targets[0], ast.Name) and self._constant(node.value):
                    constant[targets[0].id] = constant.get(targets[0].id, 0) + 1
        # A constant global is bound once in the whole file, never declared global, never a walrus target.
        constants = {n for n, c in constant.items() if c == 1 and len(bound.get(n, [])) == 1
                     and n not in global_names | walrus}
        self.constants = frozenset(constants)
        kernel_imports = {n for n, p in self.imports.items() if p.split(".")[0] in KERNEL_MODULES}
        self.kernel_globals = frozenset(kernel_imports | self.kernels | self.constexpr_fns | constants
                                        | KERNEL_BUILTINS)
        # Python's scopes: a name a function reads is its own, an enclosing function's or the module's. A binding
        # elsewhere (another function's parameter) leaves it a global, which Triton's interpreter may have filled.
        module_names, _ = _local_names(tree.body)
        self.module_names = frozenset(module_names | global_names)
        certain = {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None
                   for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        certain |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        deleted = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del)}
        self.injected_safe = frozenset(set(self.imports) | (certain - deleted - global_names))
        # Instances of the file's own classes: names every binding of which is a method's first parameter or a
        # call of one of the file's classes. Only on them may host code read back the attributes the file assigns.
        instance_bindings = {id(f.args.args[0]) for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                             for f in c.body if isinstance(f, ast.FunctionDef) and f.args.args}
        instance_bindings |= {id(n.targets[0]) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                              and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                              and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name)
                              and n.value.func.id in self.top_classes}
        self.instance_names = frozenset(n for n, nodes in bound.items()
                                        if all(id(x) in instance_bindings for x in nodes))
        self._check_entry_point()

    def _check_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                self.add(node, "imports_allowed", "a relative import (a kernel file imports only torch, triton, "
                                                  "math, os.path and typing)")
                return
            module = node.module or ""
            if any(a.name == "*" for a in node.names):
                self.add(node, "imports_allowed", f"imports * from `{module}` (every name must be imported by name)")
            top = module.split(".")[0]
            if top in self.own_modules:
                self.add(node, "imports_allowed", f"imports from `{module}`, an editable file of the candidate's own "
                                                  f"(its names are checked where they are defined, not re-exported)")
            elif module not in MODULE_NAMES:
                self.add(node, "imports_allowed", _not_importable(module))
            else:
                for a in node.names:
                    if a.name != "*" and a.name not in MODULE_NAMES[module]:
                        self.add(node, "imports_allowed", f"imports `{module}.{a.name}`, not on the allow-list of "
                                                          f"`{module}`")
            return
        for a in node.names:
            top = a.name.split(".")[0]
            if top in self.own_modules:
                self.add(node, "imports_allowed", f"imports `{a.name}`, an editable file of the candidate's own (a "
                                                  f"self-import hands out the module's names unchecked)")
            elif a.name not in MODULE_NAMES:
                self.add(node, "imports_allowed", _not_importable(a.name))

    def _check_entry_point(self) -> None:
        if self.entry_fn is None:
            return
        name = self.entry_fn
        defs = [n for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
        if len(defs) != 1:
            self.add(self.tree.body[0] if self.tree.body else self.tree, "entry_point_fixed",
                     f"the entry point `{name}` must be defined exactly once, as a function at the module's top level")
            return
        if defs[0].decorator_list:
            self.add(defs[0], "entry_point_fixed", f"the entry point `{name}` carries a decorator (what the harness "
                                                   f"calls must be the function the check read)")
        for other in self.bound.get(name, []):
            if other is not defs[0] and not isinstance(other, ast.arg):
                self.add(other, "entry_point_fixed", f"binds, deletes or declares global the entry point `{name}` "
                                                     f"besides its definition")
        if name in self.imports:
            self.add(defs[0], "entry_point_fixed", f"imports a name as the entry point `{name}`")

    def _decorated(self, fn: ast.AST) -> set[str]:
        """The resolved paths of `fn`'s decorators (``triton.jit``), '' for one that does not resolve."""
        out = set()
        for d in getattr(fn, "decorator_list", []):
            out.add(self._path(d.func if isinstance(d, ast.Call) else d) or "")
        return out

    def _path(self, node: ast.AST) -> str | None:
        """``triton.jit`` for an attribute chain or name rooted at an import, where every step is listed."""
        attrs = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if not (isinstance(node, ast.Name) and node.id in self.imports):
            return None
        path, why = _resolve(self.imports[node.id], list(reversed(attrs)))
        return None if why else path

    def _constant(self, value: ast.AST) -> bool:
        """Whether a module-level value is a constant a kernel may read: a literal, a tuple or arithmetic of them, a
        ``math.<f>(...)`` of them, a Triton attribute (``tl.float16``) or a ``tl.constexpr(...)`` of those."""
        todo = [value]
        while todo:
            v = todo.pop()
            if isinstance(v, ast.Constant):
                continue
            if isinstance(v, ast.UnaryOp):
                todo.append(v.operand)
            elif isinstance(v, ast.Tuple):
                todo.extend(v.elts)
            elif isinstance(v, ast.BinOp):
                todo += [v.left, v.right]
            elif isinstance(v, ast.Call) and not v.keywords and (self._path(v.func) or "").startswith(
                    ("math.", "triton.language.constexpr")):
                todo.extend(v.args)
            elif isinstance(v, ast.Attribute) and (self._path(v) or "").startswith("triton.language."):
                continue
            else:
                return False
        return True

    # -- the pass ------------------------------------------------------------------------------------------------
    def run(self) -> list[Finding]:
        stack: list[tuple[ast.AST, _Ctx]] = [(n, _Ctx(top=True)) for n in reversed(self.tree.body)]
        while stack:
            node, ctx = stack.pop()
            children = self._visit(node, ctx)
            if children is None:
                inner = replace(ctx, top=False)
                children = [(c, inner) for c in ast.iter_child_nodes(node)]
            stack.extend(reversed(children))
        return self.findings

    def _visit(self, node: ast.AST, ctx: _Ctx):
        """Check `node`; return the (child, context) pairs to visit next, or None for all its children in the same
        context."""
        if ctx.kernel and not isinstance(node, KERNEL_NODES + (ast.arguments, ast.arg, ast.comprehension)):
            self.add(node, "kernel_statements", f"`{type(node).__name__}` inside a kernel (a kernel's body is Triton "
                                                f"code; on the CPU interpreter it would run as Python)")
            return []
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if not ctx.top:
                self.add(node, "imports_at_module_level", "an import inside a function, class or statement (imports "
                                                          "belong at the module's top level)")
            return []
        if isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith)):
            self.add(node, "no_async", "async code (a coroutine's frame reaches builtins; a kernel wrapper has no use "
                                       "for it)")
            return []
        if isinstance(node, ast.FunctionDef):
            return self._function(node, ctx)
        if isinstance(node, ast.ClassDef):
            return self._class(node, ctx)
        if isinstance(node, ast.Lambda):
            a = node.args
            own = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x is not None}
            inner = replace(ctx, top=False, in_class=False, scope=ctx.scope | own, class_scope=frozenset())
            return [(a, replace(ctx, top=False)), (node.body, inner)]
        if isinstance(node, _COMPREHENSIONS):
            own = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            inner = replace(ctx, top=False, in_class=False, scope=ctx.scope | own, class_scope=frozenset())
            return [(c, inner) for c in ast.iter_child_nodes(node)]
        if ctx.kernel and isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            self.add(node, "kernel_statements", "assigns into an item inside a kernel (`acc[0] = ...`: Triton's "
                                                "values are immutable; on the interpreter a list holds Python's "
                                                "numbers)")
        if isinstance(node, ast.Call):
            self._called.add(id(node.func))
            f = node.func
            args = (*node.args, *(k.value for k in node.keywords))
            if ctx.kernel and isinstance(f, ast.Name) and f.id in KERNEL_CONVERSIONS and not all(
                    self._kernel_constant(a, ctx) for a in args):
                self.add(node, "kernel_names", f"`{f.id}()` of a value inside a kernel (on the interpreter it turns a "
                                               f"Triton block into Python's numbers; only constants, as "
                                               f"`float(\"-inf\")`)")
            elif ctx.kernel and (self._path(f) or "").split(".")[0] == "math" and not all(
                    self._kernel_constant(a, ctx) for a in args):
                self.add(node, "kernel_names", f"`{_describe(f)}()` of a value inside a kernel (Python's math turns a "
                                               f"Triton value into Python's numbers on the interpreter; in a kernel "
                                               f"it takes only constants and constexpr parameters)")
        elif isinstance(node, ast.Attribute):
            return self._chain(node, ctx)
        elif isinstance(node, ast.Name):
            self._name(node, ctx)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult) and not ctx.kernel:
            self.add(node, "no_matmul_operator", "uses `@` in host code (on tensors a PyTorch matmul)")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for n in node.names:
                if n.startswith("__"):
                    self.add(node, "no_dunder_bindings", f"declares the dunder name `{n}` global")
        return None

    def _host_value(self, attr: str, on_instance: bool) -> bool:
        """Whether host code may read `attr` as a value (not called): a tensor's property, or, directly on an
        instance of the file's own classes (`on_instance`: ``self.block``), an attribute the file assigns that is no
        tensor method and none of `HOST_VALUES_REFUSED`."""
        if attr in HOST_VALUES_REFUSED:
            return False
        return attr in TENSOR_PROPERTIES or (on_instance and attr in self.own_attributes
                                             and attr not in _names.TORCH_TENSOR_METHODS)

    def _kernel_constant(self, node: ast.AST, ctx: _Ctx) -> bool:
        """Whether a kernel's expression is known while it compiles: literals, constexpr parameters, constant
        globals and arithmetic or ``math.<f>(...)`` of them."""
        todo = [node]
        while todo:
            v = todo.pop()
            if isinstance(v, ast.Constant) or (isinstance(v, ast.Name) and v.id in ctx.constexprs | self.constants):
                continue
            if isinstance(v, ast.UnaryOp):
                todo.append(v.operand)
            elif isinstance(v, ast.BinOp):
                todo += [v.left, v.right]
            elif isinstance(v, ast.Tuple):
                todo.extend(v.elts)
            elif isinstance(v, ast.Call) and not v.keywords and (self._path(v.func) or "").startswith("math."):
                todo.extend(v.args)
            else:
                return False
        return True

    def _bind_dunder(self, node: ast.AST, name: str, in_class: bool) -> None:
        if name.startswith("__") and name.endswith("__") and not (in_class and name in CLASS_DUNDERS_ALLOWED):
            self.add(node, "no_dunder_bindings", f"defines `{name}` (a dunder name changes how Python or torch treats "
                                                 f"the module or object)")

    def _function(self, fn: ast.FunctionDef, ctx: _Ctx):
        self._bind_dunder(fn, fn.name, ctx.in_class)
        paths = self._decorated(fn)
        for d, path in zip(fn.decorator_list, [self._path(d.func if isinstance(d, ast.Call) else d) or ""
                                               for d in fn.decorator_list]):
            if path not in DECORATORS_ALLOWED:
                self.add(d, "decorators_triton_only", f"decorator `{_describe(d)}` (only triton.jit, autotune, "
                                                      f"heuristics and constexpr_function: a decorator replaces the "
                                                      f"function it is handed)")
        outer = _Ctx(scope=ctx.scope, class_scope=ctx.class_scope)  # decorators and defaults run where `def` is
        args = fn.args
        params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
                  if a is not None}
        own_names, _ = _local_names(fn.body)
        host = _Ctx(scope=ctx.scope | params | own_names)
        parts = [*fn.decorator_list, *args.defaults, *[d for d in args.kw_defaults if d is not None],
                 *[a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
                   if a is not None and a.annotation is not None],
                 *([fn.returns] if fn.returns is not None else [])]
        children = [(p, outer) for p in parts]
        # A constexpr function runs while a kernel compiles, on the interpreter with the kernel's live values: it is
        # held to a kernel's rules (its body Triton's or plain arithmetic on constants).
        if paths & DECORATORS_ALLOWED:
            own = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
                   if a is not None}
            for part in fn.body:
                for n in ast.walk(part):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        own.add(n.id)
            constexprs = set() if "triton.constexpr_function" in paths else {
                a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
                if a.annotation is not None and self._path(a.annotation) == "triton.language.constexpr"}
            kernel = _Ctx(kernel=True, names=frozenset(own) | self.kernel_globals, scope=host.scope,
                          constexprs=frozenset(constexprs - (own - params)))
            children += [(stmt, kernel) for stmt in fn.body]
        else:
            children += [(stmt, host) for stmt in fn.body]
        return children

    def _class(self, cls: ast.ClassDef, ctx: _Ctx):
        self._bind_dunder(cls, cls.name, ctx.in_class)
        for d in cls.decorator_list:
            self.add(d, "classes_plain", "a decorated class (a decorator replaces what it is handed)")
        for base in cls.bases:
            if not (isinstance(base, ast.Name) and base.id in self.top_classes):
                self.add(base, "classes_plain", f"a class based on `{_describe(base)}` (only the file's own "
                                                f"classes may be bases)")
        for kw in cls.keywords:
            self.add(kw, "classes_plain", "a class with a metaclass or class keywords")
        own_names, _ = _local_names(cls.body)
        return [(stmt, _Ctx(in_class=True, scope=ctx.scope, class_scope=frozenset(own_names))) for stmt in cls.body]

    def _name(self, node: ast.Name, ctx: _Ctx) -> None:
        name = node.id
        if isinstance(node.ctx, ast.Store):
            self._bind_dunder(node, name, False)
            return
        if isinstance(node.ctx, ast.Del):
            return
        before = len(self.findings)
        if name in REFUSED_NAMES or (name.startswith("__") and name not in DUNDER_NAMES_ALLOWED):
            self.add(node, "refused_names", f"uses `{name}` (it runs built code, reaches files or takes objects "
                                            f"apart: what it reaches cannot be read off the syntax tree)")
        elif name in self.imports and _namespace_of(self.imports[name]):
            self.add(node, "module_names_allowed", f"uses the module `{self.imports[name]}` as a value (only "
                                                   f"`{name}.<listed name>` is resolved)")
        elif name in ctx.scope or name in ctx.class_scope or name in self.imports:
            pass
        elif name in self.module_names:
            if name in _names.INTERPRETER_GLOBALS and name not in self.injected_safe:
                self.add(node, "unbound_names", f"reads the global `{name}`, which the file does not bind for certain "
                                                f"at its top level: Triton's CPU interpreter puts its own `{name}` "
                                                f"into a kernel file's globals")
        elif name not in BUILTIN_NAMES:
            self.add(node, "unbound_names", f"reads `{name}`, which neither its own scope, an enclosing one nor the "
                                            f"module binds, and no builtin is (a global it could only get from code "
                                            f"the check never read, as Triton's interpreter puts `np` there)")
        if ctx.kernel and name not in ctx.names and len(self.findings) == before:
            self.add(node, "kernel_names", f"reads `{name}` inside a kernel: a kernel reads its parameters, its own "
                                           f"names, modules, the file's Triton functions, constant globals and "
                                           f"{', '.join(sorted(KERNEL_BUILTINS))}")

    def _chain(self, node: ast.Attribute, ctx: _Ctx):
        """Judge a whole chain of attributes (``tl.math.exp``, ``x.view(-1).shape``) at its outermost link; return
        what is left to visit (the chain's root where it is no plain name)."""
        links: list[ast.Attribute] = []
        root: ast.AST = node
        while isinstance(root, ast.Attribute):
            links.append(root)
            root = root.value
        links.reverse()  # innermost first
        for link in links:
            a = link.attr
            if (a.startswith("__") and a.endswith("__") and a not in DUNDER_ATTRIBUTES_ALLOWED) or a in FRAME_ATTRIBUTES:
                self.add(link, "no_introspection", f"reaches `{a}` (an object's innards: its class, globals or frame)")
        if isinstance(root, ast.Name) and root.id in self.imports:
            path, why = _resolve(self.imports[root.id], [l.attr for l in links])
            if ctx.kernel and not path.startswith(KERNEL_MODULES):
                self.add(node, "module_names_allowed", f"uses `{path}` inside a kernel (a kernel's body is Triton "
                                                       f"code: only triton and math are reached from it)")
            elif why:
                self.add(node, "module_names_allowed", f"reaches `{path}`: {why} (modules' own imports are their "
                                                       f"attributes; only names listed ahead are reached)")
            elif isinstance(node.ctx, (ast.Store, ast.Del)):
                self.add(node, "module_names_allowed", f"assigns into `{path}` (a module the grader relies on)")
            elif _namespace_of(path) and not ctx.kernel:
                self.add(node, "module_names_allowed", f"uses the module `{path}` as a value")
            return []
        on_instance = isinstance(root, ast.Name) and root.id in self.instance_names
        for i, link in enumerate(links):
            a = link.attr
            called = i == len(links) - 1 and id(node) in self._called
            own = i == 0 and on_instance and a in self.own_attributes
            if ctx.kernel:
                if a not in _names.TL_TENSOR_ATTRIBUTES:
                    self.add(link, "kernel_attributes", f"`.{a}` inside a kernel (a kernel's values are Triton's; "
                                                        f"`.handle` and `.data` are the interpreter's arrays)")
            elif called:
                if a not in METHOD_ALLOWED and not own:
                    self.add(link, "host_methods_allowed", f"calls `.{a}()`, which is not an allocation, view, shape "
                                                           f"or container method")
            elif not self._host_value(a, i == 0 and on_instance):
                self.add(link, "host_values_allowed", f"reads `.{a}` as a value: host code reads only a tensor's "
                                                      f"properties and attributes the file assigns (a method taken "
                                                      f"as a value hides the call it is later)")
        return [(root, ctx)]


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _local_names(body: list[ast.AST]) -> tuple[set[str], set[str]]:
    """The names a scope's statements bind by Python's rule (assigned, deleted, imported, defined, caught, matched or
    a walrus target, anywhere in the scope but inside nested functions, lambdas, classes and a comprehension's own
    targets), less those it declares global; and those it declares global."""
    names: set[str] = set()
    declared: set[str] = set()
    todo = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            todo += node.decorator_list
            if isinstance(node, ast.ClassDef):
                todo += [*node.bases, *(k.value for k in node.keywords)]
            else:
                todo += [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
            continue
        if isinstance(node, ast.Lambda):
            todo += [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
            continue
        if isinstance(node, _COMPREHENSIONS):
            todo += [getattr(node, f) for f in ("elt", "key", "value") if hasattr(node, f)]
            for g in node.generators:
                todo += [g.iter, *g.ifs]
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {a.asname or a.name.split(".")[0] for a in node.names if a.name != "*"}
        elif isinstance(node, ast.Global):
            declared.update(node.names)
        todo.extend(ast.iter_child_nodes(node))
    return names - declared, declared


def _main_guard(node: ast.AST) -> bool:
    """``if __name__ == "__main__":`` with no else: a self-test block, which never runs when the harness imports the
    file (as its own module name; binding ``__name__`` is refused), and so is no part of what is graded."""
    t = node.test if isinstance(node, ast.If) else None
    return (isinstance(t, ast.Compare) and not node.orelse and isinstance(t.left, ast.Name)
            and t.left.id == "__name__" and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq)
            and len(t.comparators) == 1 and isinstance(t.comparators[0], ast.Constant)
            and t.comparators[0].value == "__main__")


def _describe(node: ast.AST) -> str:
    """A short name for an expression in a message (``triton.jit``, ``deco``, ``a call``), without unparsing it
    (a long or deep expression costs nothing)."""
    target = node.func if isinstance(node, ast.Call) else node
    attrs = []
    while isinstance(target, ast.Attribute) and len(attrs) < 8:
        attrs.append(target.attr)
        target = target.value
    if isinstance(target, ast.Name):
        return ".".join([target.id, *reversed(attrs)]) + ("(...)" if isinstance(node, ast.Call) else "")
    return f"a {type(node).__name__} expression"


def _not_importable(module: str) -> str:
    return (f"imports `{module}`: a kernel file imports only torch, triton (and triton.language), math, os.path, "
            f"typing and __future__ (never the reference, the grader's modules or the standard library)")


def check_source(files: dict[str, str], entry_point: str, reference: str) -> list[Finding]:
    """Findings of the static provenance check over the candidate's editable Python files, in this process (pure:
    nothing is imported or run; `run_static_check` in static_check.py runs it in a sandbox under a time limit).

    Args:
        files: editable file path (relative, ``.py`` only) -> its source text.
        entry_point: ``file.py:function`` of the task.
        reference: the task's reference, ``file.py:function`` (its module is never importable: `imports_allowed`).

    Returns:
        Every refused use, in file and line order, each naming its rule; a file that does not parse is left to the
        compile gate (no finding).
    """
    entry_file, entry_fn = entry_point.split(":")
    own = {Path(rel).stem for rel in files} | {Path(reference.split(":")[0]).stem}
    findings: list[Finding] = []
    for rel, src in files.items():
        try:
            tree = ast.parse(src, filename=rel)
        except (SyntaxError, ValueError):
            continue
        except (RecursionError, MemoryError):
            findings.append(Finding(rel, 1, TOO_DEEP, "source_readable"))
            continue
        tree.body = [n for n in tree.body if not _main_guard(n)]
        findings += _FileChecker(rel, tree, entry_fn if rel == entry_file else None, own).run()
    unique = {(f.file, f.line, f.what): f for f in findings}
    return sorted(unique.values(), key=lambda f: (f.file, f.line, f.what))


def source_errors(files: dict[str, bytes], max_bytes: int) -> list[Finding]:
    """Why each unreadable file cannot be judged (`source_readable`): over `max_bytes`, a NUL byte, or not UTF-8.
    Such a file fails compile, on every supported Python alike."""
    out = []
    for rel, data in files.items():
        if len(data) > max_bytes:
            out.append(Finding(rel, 1, f"the file is {len(data)} bytes, over the cap of {max_bytes}", "source_readable"))
        elif b"\x00" in data:
            line = data[:data.index(b"\x00")].count(b"\n") + 1
            out.append(Finding(rel, line, "the file holds a NUL byte (Python source cannot)", "source_readable"))
        else:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                line = data[:exc.start].count(b"\n") + 1
                out.append(Finding(rel, line, f"the file is not valid UTF-8 (byte {exc.start}: {exc.reason})",
                                   "source_readable"))
    return out


def check_files(files: dict[str, bytes], entry_point: str, reference: str, max_bytes: int) -> dict:
    """The static check over raw editable files: ``{"source_errors": [...], "findings": [...]}``, each a list of
    finding dicts (file, line, what, rule). Source errors fail compile; findings fail correctness. Python files are
    judged by `check_source`, C++/CUDA ones by `check_cpp_source`."""
    errors = source_errors(files, max_bytes)
    bad = {f.file for f in errors}
    py = {rel: data.decode() for rel, data in files.items() if rel.endswith(".py") and rel not in bad}
    cpp = {rel: data.decode(errors="replace") for rel, data in files.items()
           if rel.endswith(CPP_SUFFIXES) and rel not in bad}
    findings = check_source(py, entry_point, reference) + check_cpp_source(cpp)
    as_dict = lambda f: {"file": f.file, "line": f.line, "what": f.what, "rule": f.rule}  # noqa: E731
    return {"source_errors": [as_dict(f) for f in errors], "findings": [as_dict(f) for f in findings]}


#: The suffixes `check_cpp_source` reads.
CPP_SUFFIXES = (".cpp", ".cu", ".cuh", ".h", ".hpp")


def main(argv: list[str]) -> int:
    """The check's sandboxed process: ``provenance.py IN OUT``. IN is JSON ``{"files": {rel: latin-1 text},
    "entry_point", "reference", "max_bytes"}``; OUT gets `check_files`' result as JSON."""
    with open(argv[1], "rb") as f:
        req = json.load(f)
    files = {rel: text.encode("latin-1") for rel, text in req["files"].items()}
    result = check_files(files, req["entry_point"], req["reference"], int(req["max_bytes"]))
    tmp = argv[2] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, argv[2])
    return 0


# -- C++ and CUDA sources ----------------------------------------------------------------------------------------
#: What `torch::` / `at::` may name in a C++ source: types, allocation, dtypes, devices, streams, checks.
CPP_TORCH_ALLOWED = frozenset({
    "Tensor", "TensorOptions", "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like",
    "full", "full_like", "ScalarType", "Device", "DeviceType", "IntArrayRef", "Scalar", "Half", "BFloat16",
    "kFloat", "kFloat32", "kHalf", "kFloat16", "kBFloat16", "kDouble", "kInt", "kInt32", "kLong", "kInt64", "kByte",
    "kChar", "kBool", "kFloat8_e4m3fn", "kFloat8_e5m2", "kCUDA", "kCPU", "cuda", "dtype", "device", "MemoryFormat",
    "Layout", "kStrided", "TensorAccessor", "PackedTensorAccessor32", "PackedTensorAccessor64", "RestrictPtrTraits",
    "DefaultPtrTraits", "elementSize", "toString", "OptionalDeviceGuard", "Generator", "optional", "nullopt",
})


#: Prefixes of a raw string literal (R"d(...)d"), as the tokenizer reads them: an identifier right before the quote.
RAW_PREFIXES = frozenset({"R", "uR", "UR", "LR", "u8R"})


def _cpp_tokens(source: str) -> list[tuple[int, str]]:
    """(line, token) of a C++ source with comments and string and character literals removed: identifiers, `::`,
    `.`, `->`, `(` and other single characters. A tokenizer, not a pattern over the text: a name inside a comment or
    a string is not code."""
    tokens, i, line, n = [], 0, 1, len(source)
    while i < n:
        c = source[i]
        if c == "\n":
            line += 1
            i += 1
        elif source.startswith("//", i):
            end = source.find("\n", i)
            i = n if end < 0 else end
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += source.count("\n", i, end)
            i = end
        elif c == '"' and tokens and tokens[-1][1] in RAW_PREFIXES and source[i - 1] == "R" \
                and 0 <= source.find("(", i + 1, i + 18):
            # A raw string, R"d(...)d": no escapes, and quotes inside it do not end it.
            k = source.find("(", i + 1, i + 18)
            end = source.find(")" + source[i + 1:k] + '"', k + 1)
            end = n if end < 0 else end + k - i + 1
            tokens.pop()  # its prefix is no identifier
            line += source.count("\n", i, end)
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c:
                j += 2 if source[j] == "\\" else 1
            line += source.count("\n", i, j)
            i = j + 1
        elif c.isdigit() or (c == "." and source[i + 1:i + 2].isdigit()):
            # A number, read whole: C++14 digit separators (1'000) are no character literal.
            j = i + 1
            while j < n:
                d = source[j]
                if d.isalnum() or d in "_.":
                    j += 1
                elif d == "'" and (source[j + 1:j + 2].isalnum() or source[j + 1:j + 2] == "_"):
                    j += 2
                elif d in "+-" and source[j - 1] in "eEpP":
                    j += 1
                else:
                    break
            tokens.append((line, source[i:j]))
            i = j
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (source[j].isalnum() or source[j] == "_"):
                j += 1
            tokens.append((line, source[i:j]))
            i = j
        elif source.startswith("::", i) or source.startswith("->", i):
            tokens.append((line, source[i:i + 2]))
            i += 2
        elif c.isspace():
            i += 1
        else:
            tokens.append((line, c))
            i += 1
    return tokens


#: `at::cuda::` / `c10::cuda::` names a binding may use: streams, guards, device properties (not cuBLAS or others).
CPP_CUDA_ALLOWED = frozenset({"getCurrentCUDAStream", "getDefaultCUDAStream", "CUDAGuard", "OptionalCUDAGuard",
                              "CUDAStream", "CUDAStreamGuard", "getCurrentDeviceProperties", "getDeviceProperties",
                              "device_count", "current_device"})
#: Methods (``.name(`` / ``->name(``) a C++ source may call: tensor shapes and pointers, pybind11's binding, std containers.
CPP_METHOD_ALLOWED = frozenset({
    "size", "sizes", "numel", "dim", "stride", "strides", "data_ptr", "scalar_type", "dtype", "device", "options",
    "is_cuda", "is_contiguous", "contiguous", "view", "reshape", "get_device", "element_size", "defined", "index",
    "def", "attr", "push_back", "emplace_back", "begin", "end", "data", "c_str", "reserve", "resize", "front", "back",
    "empty", "value", "has_value", "str", "item", "is_floating_point", "layout", "storage_offset", "itemsize",
    "const_data_ptr", "mutable_data_ptr", "packed_accessor32", "packed_accessor64", "accessor", "stream",
})
NAMESPACES = ("torch", "at", "aten", "c10")
#: C and C++ names that reach the host's files, environment, processes or libraries: a binding needs none of them
#: (the grading seed sits in a file of the grading directory; a library loaded by hand computes unseen), as in Python.
CPP_HOST_NAMES = frozenset({
    "fopen", "freopen", "fdopen", "open", "openat", "creat", "read", "write", "pread", "pwrite", "mmap", "fstream",
    "ifstream", "ofstream", "filebuf", "getenv", "secure_getenv", "setenv", "putenv", "environ", "system", "popen",
    "fork", "vfork", "execv", "execve", "execvp", "execl", "execlp", "posix_spawn", "dlopen", "dlsym", "syscall",
    "ptrace", "kill", "socket", "connect", "cublasCreate", "cublasCreate_v2", "cublasLtCreate", "cudnnCreate",
    "cusparseCreate", "cusolverDnCreate",
})


def check_cpp_source(files: dict[str, str]) -> list[Finding]:
    """Findings over C++/CUDA sources (``.cpp``, ``.cu``, ``.cuh``, ``.h``): names in the ``torch::``/``at::``/
    ``c10::`` namespaces outside `CPP_TORCH_ALLOWED` and `CPP_CUDA_ALLOWED` (``torch::matmul``, ``at::gelu``,
    ``c10::Dispatcher``, cuBLAS through ``at::cuda::blas``); ways to name them unqualified (``using namespace at``,
    a namespace alias, a ``#define``); and method calls outside `CPP_METHOD_ALLOWED` (``x.sum()``, ``x.to(...)``)."""
    findings = []
    for rel, src in files.items():
        toks = _cpp_tokens(src)
        words = [t for _, t in toks]
        for k, (line, tok) in enumerate(toks):
            nxt = words[k + 1] if k + 1 < len(words) else ""
            after = words[k + 2] if k + 2 < len(words) else ""
            if tok in NAMESPACES and nxt == "::":
                if after == "cuda":
                    name = words[k + 4] if k + 4 < len(words) and words[k + 3] == "::" else ""
                    if name not in CPP_CUDA_ALLOWED:
                        findings.append(Finding(rel, line, f"uses `{tok}::cuda::{name}` (only streams, guards and "
                                                           f"device properties are allowed)"))
                elif after not in CPP_TORCH_ALLOWED:
                    findings.append(Finding(rel, line, f"uses torch compute `{tok}::{after}`"))
            elif tok == "using" and nxt == "namespace" and after in NAMESPACES:
                findings.append(Finding(rel, line, f"`using namespace {after}` (its compute could be named unqualified)"))
            elif tok == "namespace" and after == "=":
                findings.append(Finding(rel, line, "a namespace alias (it could name torch's compute unchecked)"))
            elif tok == "define" and k > 0 and words[k - 1] == "#" and k + 2 < len(words) and (
                    words[k + 2] in NAMESPACES or words[k + 1] in NAMESPACES):
                findings.append(Finding(rel, line, f"a #define of `{words[k + 1]}` naming a torch namespace"))
            elif tok in CPP_HOST_NAMES and nxt == "(" or tok in ("fstream", "ifstream", "ofstream", "environ"):
                findings.append(Finding(rel, line, f"uses `{tok}` (a kernel's binding has no use for the host's files, "
                                                   f"environment, processes or vendor libraries)"))
            elif tok in (".", "->") and after == "(" and nxt not in CPP_METHOD_ALLOWED:
                findings.append(Finding(rel, line, f"calls `.{nxt}()`, which is not a shape, pointer or binding "
                                                   f"method"))
    return findings


if __name__ == "__main__":
    sys.exit(main(sys.argv))
