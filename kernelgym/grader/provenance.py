"""Static provenance check: the candidate's Python must leave the computing to its own kernels.

Run by the trusted parent on the editable files copied into the grading directory, before any candidate code runs.
It reads the syntax tree (never regular expressions: an alias or a string concatenation does not slip through a
name check), starting from the entry point: module-level code of every editable Python file (it runs at import),
the entry function, and every function of those files it reaches by name. On that path it refuses:

- torch attributes outside `TORCH_ALLOWED` (allocation, dtypes, devices, streams): ``torch.matmul``, ``torch.sum``,
  ``torch.nn.functional.*``, ``torch.ops.*``; also through an alias (``import torch as T``, ``from torch import
  matmul``, ``F = torch.nn.functional``) and ``getattr(torch, ...)``;
- tensor methods that compute (`COMPUTE_METHODS`: ``x.sum()``, ``x @ w`` as `ast.MatMult`, ``x.float()``);
- any import of, or file access naming, the task's reference module (the answer itself).

Kernels (functions decorated with ``triton.jit``/``triton.autotune``/``triton.heuristics``) are held to what Triton
compiles (`_KernelChecker`): on the CPU interpreter their bodies run as Python, so a kernel that imports the reference
or reads a module-level global other than a constant is refused; their ``tl.*`` code is the candidate's own work.
Imports are an allow-list (`ALLOWED_IMPORTS`: torch, triton, math, ... and the candidate's own files). A module's own
imports are its attributes (``os.sys``, ``triton.knobs.re.enum.bltns`` is builtins), so an attribute chain rooted at an
import is resolved against the installed modules and may reach no module outside `ALLOWED_NAMESPACES`, no private name,
and none of the names refused by name (`REACH_ATTRIBUTES`); a module, ``getattr`` or ``hasattr`` passed around as a
value is refused. What this cannot see (code built at run time from strings, ``exec``,
``__import__``) is refused by name too (`DYNAMIC`). The check is a first line: on a GPU an outside observer lists
the kernels that actually ran (a later part of the provenance work); on the CPU interpreter this is the only check
besides the launch counter, and the grade says so.

C++ and CUDA sources (`check_cpp_source`) are read as tokens, comments and strings removed: ``torch::``/``at::``
names outside allocation, types and streams, and computing tensor methods, are refused anywhere in them.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import types
from dataclasses import dataclass
from pathlib import Path

#: torch attributes the entry point's path may use: allocation, dtypes, devices, shapes, streams and events.
TORCH_ALLOWED = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "Tensor", "Size", "dtype", "device", "Generator", "cuda", "float16", "half", "bfloat16", "float32", "float",
    "float64", "double", "int8", "uint8", "int16", "int32", "int64", "long", "int", "bool", "float8_e4m3fn",
    "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "is_tensor", "is_floating_point", "finfo", "iinfo",
    "get_default_dtype", "no_grad", "inference_mode", "library", "version", "__version__", "Stream", "Event",
})
#: torch.cuda attributes allowed (streams, devices, properties): ``torch.cuda.<name>``.
TORCH_CUDA_ALLOWED = frozenset({
    "current_stream", "default_stream", "stream", "Stream", "Event", "current_device", "device", "get_device_properties",
    "get_device_capability", "is_available", "device_count", "synchronize",
})
#: Tensor methods that compute: on the entry point's path they mean the output is computed by PyTorch.
COMPUTE_METHODS = frozenset({
    "sum", "mean", "max", "min", "amax", "amin", "prod", "var", "std", "norm", "matmul", "mm", "bmm", "mv", "dot",
    "addmm", "baddbmm", "einsum", "softmax", "log_softmax", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "pow",
    "square", "abs", "neg", "reciprocal", "mul", "mul_", "add_", "sub", "sub_", "div", "div_", "relu", "sigmoid",
    "tanh", "gelu", "silu", "erf", "cumsum", "cumprod", "topk", "argsort", "argmax", "argmin", "gather",
    "scatter", "scatter_add", "index_select", "masked_fill", "where", "clamp", "clip", "float", "half", "bfloat16",
    "double", "to", "type", "type_as", "clone", "copy_", "logsumexp", "softplus", "lerp", "addcmul", "addcdiv",
    "maximum", "minimum", "floor", "ceil", "round", "sign", "cos", "sin", "triu", "tril", "outer", "kron",
    "index_add", "index_copy", "index_put", "index_put_", "masked_scatter", "repeat", "repeat_interleave", "flip",
    "roll", "nonzero", "unique", "cross", "histc", "bincount",
})
# Left out though tensors have them, because Python's own containers share the name and a wrapper may use those:
# add, sort, all, any, count, index. Their torch forms (torch.sort, ...) are refused as torch attributes.
#: Names that run code built at run time: refused on the path.
DYNAMIC = frozenset({"exec", "eval", "compile", "__import__", "importlib", "builtins", "__builtins__", "globals",
                     "locals", "vars", "runpy", "pkgutil", "zipimport", "pickle", "marshal", "operator", "sys",
                     "numpy", "type", "setattr", "delattr"})
#: Modules a kernel wrapper has no use for, which reach the grader's process, its memory or its files from the side:
#: refused on the path (a forked helper that rewrites the outputs after the harness saved them, a thread that works
#: while the baseline is timed, a walk of the garbage collector for the expected tensors).
PROCESS_MODULES = frozenset({"subprocess", "ctypes", "_ctypes", "multiprocessing", "threading", "_thread", "signal",
                             "_signal", "gc", "inspect", "mmap", "pty", "concurrent", "asyncio", "_posixsubprocess",
                             "posix", "io", "shutil", "tempfile", "pathlib", "glob", "base64", "codecs", "socket",
                             "urllib", "http"})
#: Names that read or write the host's files or environment: refused on the path. A kernel wrapper needs neither, and
#: both tell one grading process from another (the observed run is a second process, with the profiler injected),
#: which would let a candidate be honest only while observed; `open` also writes into Triton's cache.
HOST_NAMES = frozenset({"open", "__file__", "input", "breakpoint"})
#: os attributes refused on the path, for the same reason (os.path stays: joining names tells nothing).
OS_HOST = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv", "walk", "listdir", "scandir",
                     "remove", "unlink", "rename", "replace", "makedirs", "mkdir", "rmdir", "open", "write", "read",
                     "fdopen", "stat", "lstat", "readlink", "symlink", "link", "chmod", "getpid", "getppid"})
#: Attributes that reach an object's innards (its class, its module's globals, its frame): refused on the path.
INTROSPECTION = frozenset({"__dict__", "__globals__", "__builtins__", "__subclasses__", "__class__", "__bases__",
                           "__mro__", "__code__", "__closure__", "__func__", "__self__", "__getattribute__",
                           "_getframe", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace",
                           "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame",
                           "ag_code", "ag_await", "tb_frame", "tb_next"})
#: Methods a wrapper may call on anything that is not a module: allocation, views, shapes, and Python's containers.
#: Every other method call is refused (a deny-list of computing tensor methods cannot keep up with PyTorch).
METHOD_ALLOWED = frozenset({
    "view", "reshape", "contiguous", "stride", "size", "numel", "dim", "data_ptr", "is_contiguous", "element_size",
    "new_empty", "new_zeros", "new_ones", "new_full", "unsqueeze", "squeeze", "flatten", "view_as", "expand",
    "expand_as", "reshape_as", "permute", "transpose", "t", "narrow", "select", "unbind", "split", "chunk", "storage_offset",
    "get_device", "fill_", "zero_", "is_floating_point", "dtype", "__init__",
    "append", "extend", "insert", "get", "items", "keys", "values", "setdefault", "pop", "update", "join",
    "startswith", "endswith", "lower", "upper", "strip", "index", "count", "copy", "run", "warmup", "cdiv",
})
#: os functions refused on the path, for the same reason.
OS_PROCESS = frozenset({"fork", "forkpty", "system", "popen", "kill", "killpg", "_exit", "posix_spawn", "posix_spawnp",
                        "execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp", "execvpe", "spawnv",
                        "spawnve", "spawnl", "spawnle", "register_at_fork", "pidfd_open"})
#: Decorators that make a function a kernel (its body is the candidate's own device code).
KERNEL_DECORATORS = frozenset({"jit", "autotune", "heuristics"})
#: Attribute names refused anywhere on the path, whatever they are reached from: every module's own imports are
#: attributes of it (``os.sys.modules``, ``triton.runtime.cache.os.environ``, ``triton.testing.subprocess``), so the
#: names refused as names are refused as attributes too.
REACH_ATTRIBUTES = (DYNAMIC | PROCESS_MODULES | {"os", "modules", "environ", "environb", "getenv", "putenv", "system",
                                                 "popen", "open"}) - {"type"}
#: Modules a candidate's file may import (and their submodules): what a kernel file needs. Every other import is
#: refused: a deny-list cannot keep up with the standard library (linecache, fileinput and _io read files) or with
#: packages that import torch themselves (functorch.torch).
ALLOWED_IMPORTS = frozenset({"torch", "triton", "math", "__future__", "os"})
#: The modules a chain of attributes rooted at an import may pass through or end at (besides the imported module
#: itself): modules import other modules, which are then their attributes (``triton.knobs.re.enum.bltns`` is
#: builtins, ``os.sys`` is sys), so a chain is resolved against the installed modules, and every module it reaches
#: must be one of these. An attribute starting with ``_`` is refused anywhere in such a chain.
ALLOWED_NAMESPACES = frozenset({
    "triton.language", "triton.language.math", "triton.language.extra", "triton.language.extra.libdevice",
    "triton.language.extra.cuda", "triton.language.extra.cuda.libdevice", "triton.language.extra.hip",
    "triton.language.extra.hip.libdevice", "triton.runtime", "os.path",
})
#: Namespaces of `ALLOWED_NAMESPACES` whose names are an allow-list too: ``triton.runtime`` only for its driver (the
#: device's properties), ``os.path`` only for joining names (expandvars reads the environment, exists stats files).
NAMESPACE_NAMES = {"triton.runtime": frozenset({"driver"}),
                   "os.path": frozenset({"join", "basename", "dirname", "splitext", "split", "normpath", "sep"})}
#: Builtins whose use as a value (``G = getattr``, ``def f(g=getattr)``) would hide a call the check reads by name.
NOT_AS_VALUES = frozenset({"getattr", "hasattr"})
#: Builtins a kernel body may call: Triton's frontend accepts these (the rest of a kernel's calls are ``tl``/triton
#: functions, the file's own functions, or methods of the kernel's own values).
KERNEL_BUILTINS = frozenset({"range", "min", "max", "len", "int", "float", "bool", "abs", "print", "isinstance",
                             "tuple", "list", "zip", "enumerate", "str"})


@dataclass(frozen=True)
class Finding:
    """One refused use: the file, line and what it is."""

    file: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what}"


class _Module:
    """One editable Python file: its tree, functions by name, and the names bound to torch and its submodules."""

    def __init__(self, rel: str, source: str):
        self.rel, self.tree = rel, ast.parse(source, filename=rel)
        # Every def of a name (a nested def must not hide the module-level one), and a class's name reaches all its
        # methods (an instance's method or __call__ is reached through the class).
        self.functions: dict[str, list] = {}
        for n in ast.walk(self.tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(n.name, []).append(n)
            elif isinstance(n, ast.ClassDef):
                self.functions.setdefault(n.name, []).extend(
                    b for b in ast.walk(n) if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)))
        self.module_names: set[str] = set()  # every name bound by an import: calls on them are module calls
        self.import_paths: dict[str, str] = {}  # local name -> what it names ("tl" -> "triton.language")
        self.plain_modules: set[str] = set()  # names bound by `import x` / `import x.y as z`: modules for sure
        self.torch_names: dict[str, str] = {}  # local name -> dotted torch path ("torch", "torch.nn.functional")
        self.triton_names: dict[str, str] = {}  # local name -> dotted triton path ("triton", "triton.jit")
        self.os_names: set[str] = set()  # local names bound to the os module
        # Module-level imports only: an import inside a function binds a local name (a decoy function's `from math
        # import pi as x` would otherwise make every `x.float()` a module call).
        import_binds: dict[str, set[str]] = {}  # every path each name is imported as, and where
        for node in _module_level(self.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.module_names.update((a.asname or a.name).split(".")[0] for a in node.names)
            if isinstance(node, ast.Import):
                for a in node.names:
                    local = a.asname or a.name.split(".")[0]
                    self.import_paths[local] = a.name if a.asname else a.name.split(".")[0]
                    self.plain_modules.add(local)
                    import_binds.setdefault(local, set()).add(self.import_paths[local])
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    self.import_paths[a.asname or a.name] = f"{node.module}.{a.name}"
                    import_binds.setdefault(a.asname or a.name, set()).add(f"{node.module}.{a.name}")
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] in ("os", "posix"):
                        self.os_names.add(a.asname or a.name.split(".")[0])
                    if a.name == "triton" or a.name.startswith("triton."):
                        self.triton_names[a.asname or "triton"] = a.name if a.asname else "triton"
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "triton":
                for a in node.names:
                    self.triton_names[a.asname or a.name] = f"{node.module}.{a.name}"
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "torch" or a.name.startswith("torch."):
                        self.torch_names[a.asname or a.name.split(".")[0]] = a.name if a.asname else "torch"
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
                for a in node.names:
                    self.torch_names[a.asname or a.name] = f"{node.module}.{a.name}"
        # A name the rules read as an imported module must be nothing else anywhere in the file: a local `s = x * x`
        # under `import math as s` would make `s.mean()` a module call, and two imports of one name leave which one
        # holds to the order the statements run in.
        bound = {n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
        bound |= {n.arg for n in ast.walk(self.tree) if isinstance(n, ast.arg)}
        bound |= {n.name for n in ast.walk(self.tree)
                  if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)) and n.name}
        self.rebound_imports = sorted({n for n, paths in import_binds.items() if len(paths) > 1}
                                      | (set(import_binds) & bound))
        # What a kernel body may read besides its own names, as Triton compiles it: modules, Triton, the file's
        # functions, builtins, and globals that hold constants (Triton takes `tl.constexpr` and dtype globals; the
        # interpreter any). A global bound anywhere to anything else (a list of the wrapper's tensors) is refused.
        defs = {n.name for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.kernel_globals = set(self.module_names) | set(self.triton_names) | defs | KERNEL_BUILTINS
        constant, other = set(), {n for g in ast.walk(self.tree) if isinstance(g, (ast.Global, ast.Nonlocal))
                                  for n in g.names}
        for node in _module_level(self.tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and self._constant(node.value):
                        constant.add(target.id)
                    else:
                        other |= _bound_names(target)
                other |= _bound_names(node.value)  # a walrus inside the value
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                other |= _bound_names(node, own_scope=False) - {node.name}  # its decorators' and defaults' walruses
            elif isinstance(node, ast.ClassDef):
                other.add(node.name)
            else:  # for, with, del, augmented assignment, a walrus in a test: this statement's own bindings
                other |= _bound_names(node, own_scope=False)
        self.kernel_globals |= constant - other

    def _constant(self, value: ast.AST) -> bool:
        """Whether a module-level value is a constant a kernel may read: a literal (``2.0``, ``-1``, ``"x"``), a tuple
        of them, a Triton attribute (``tl.float16``) or a ``tl.constexpr(...)`` of those."""
        if isinstance(value, ast.Constant):
            return True
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
            return self._constant(value.operand)
        if isinstance(value, ast.Tuple):
            return all(self._constant(e) for e in value.elts)
        if isinstance(value, ast.BinOp):
            return self._constant(value.left) and self._constant(value.right)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name) \
                and self.import_paths.get(value.func.value.id) == "math" and not value.keywords:
            return all(self._constant(a) for a in value.args)  # math.log(2.0)
        if isinstance(value, ast.Attribute):
            root = value
            while isinstance(root, ast.Attribute):
                root = root.value
            return isinstance(root, ast.Name) and root.id in self.triton_names
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "constexpr":
            return self._constant(value.func) and all(self._constant(a) for a in value.args) and not value.keywords
        return False


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
           ast.GeneratorExp)


def _bound_names(node: ast.AST, own_scope: bool = True) -> set[str]:
    """Names `node` binds or deletes in the scope it runs in: nested defs, lambdas and comprehensions (scopes of their
    own) are not entered, nor (with `own_scope` False) statements nested in `node`, which are visited on their own."""
    names, todo = set(), [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        for child in ast.iter_child_nodes(n):
            if isinstance(child, _SCOPES) or (not own_scope and child is not node and isinstance(child, ast.stmt)):
                continue
            todo.append(child)
    return names


def _module_level(tree: ast.Module):
    """The statements that run at module level, nested ones (under `if`, `for`, `with`, `try`) included, defs' bodies
    not."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo += [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]


def _is_kernel(fn: ast.AST, triton_names: dict[str, str]) -> bool:
    """Whether `fn` is decorated with Triton's own ``jit``/``autotune``/``heuristics`` (resolved through the imports:
    a decorator of the candidate's own that is merely called ``jit`` does not make a function a kernel)."""
    for d in getattr(fn, "decorator_list", []):
        target = d.func if isinstance(d, ast.Call) else d
        path = _dotted(target, triton_names) if isinstance(target, ast.Attribute) else triton_names.get(
            getattr(target, "id", ""))
        if path and path.split(".")[0] == "triton" and path.split(".")[-1] in KERNEL_DECORATORS:
            return True
    return False


def _dotted(node: ast.AST, torch_names: dict[str, str]) -> str | None:
    """``torch.nn.functional.gelu`` for an attribute chain rooted at a name bound to torch, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in torch_names:
        return ".".join([torch_names[node.id], *reversed(parts)])
    return None


def _torch_allowed(path: str) -> bool:
    parts = path.split(".")
    if parts[0] != "torch":
        return False
    if len(parts) == 1:
        return True
    if parts[1] == "cuda":
        return len(parts) == 2 or (len(parts) == 3 and parts[2] in TORCH_CUDA_ALLOWED)
    # Exactly torch.<name>: torch.Tensor.mean(x) computes, though torch.Tensor itself is allowed.
    return len(parts) == 2 and parts[1] in TORCH_ALLOWED


class _PathChecker(ast.NodeVisitor):
    """Visits the code on the entry point's path of one module, collecting findings and the functions it calls."""

    def __init__(self, module: _Module, reference_names: set[str], own_modules: set[str] = frozenset()):
        self.m, self.reference_names, self.own_modules = module, reference_names, set(own_modules)
        self._call_funcs: set[int] = set()  # the attribute nodes that are called (`x.view(...)`, not `f = x.mul`)
        self.findings: list[Finding] = []
        self.called: set[str] = set()

    def add(self, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(self.m.rel, getattr(node, "lineno", 0), what))

    def visit_FunctionDef(self, node):  # a def's body is visited only when reached by name
        # Decorators, defaults and annotations run where the def stands.
        for part in (*node.decorator_list, *node.args.defaults, *[d for d in node.args.kw_defaults if d is not None],
                     *[a.annotation for a in (*node.args.args, *node.args.kwonlyargs) if a.annotation is not None],
                     *([node.returns] if node.returns is not None else [])):
            self.visit(part)
        if node.name in self.m.triton_names:
            self.add(node, f"redefines `{node.name}`, imported from triton")

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self.generic_visit(node)

    def visit_ClassDef(self, node):  # the class body runs at the def; its methods only when the class is reached
        for stmt in node.body:
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.visit(stmt)
            else:
                self.visit_FunctionDef(stmt)
        for part in (*node.decorator_list, *node.bases, *node.keywords):
            self.visit(part)

    def _store_target(self, target):
        root = target
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if isinstance(root, ast.Name) and (root.id in self.m.triton_names or root.id in self.m.torch_names) and (
                target is not root):
            self.add(target, f"assigns into `{root.id}` (a module the grader relies on)")
        elif isinstance(target, ast.Name) and target.id in self.m.triton_names:
            self.add(target, f"rebinds `{target.id}`, imported from triton")

    def visit_Assign(self, node):
        for t in node.targets:
            self._store_target(t)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._store_target(node.target)
        self.generic_visit(node)

    def visit_Import(self, node):
        for a in node.names:
            self._check_import(node, a.name)

    def visit_ImportFrom(self, node):
        self._check_import(node, node.module or "")
        if not node.module:  # `from . import reference`: the names are modules
            for a in node.names:
                self._check_import(node, a.name)
        elif node.module.split(".")[0] in ALLOWED_IMPORTS:  # `from triton import knobs`: a module by another name
            for a in node.names:
                if a.name != "*":
                    self._check_import(node, f"{node.module}.{a.name}")
        for a in node.names:
            if a.name.split(".")[0] in self.reference_names:
                self.add(node, f"imports the task's reference module `{a.name}`")
        if node.module in ("os", "posix") and any(a.name == "*" for a in node.names):
            self.add(node, f"imports * from `{node.module}`")
        if node.module == "os":
            for a in node.names:
                if a.name in OS_PROCESS:
                    self.add(node, f"imports `os.{a.name}` (a kernel wrapper has no use for processes)")
                if a.name in OS_HOST:
                    self.add(node, f"imports `os.{a.name}` (a kernel wrapper has no use for the host's files or "
                                   f"environment)")
        for a in node.names:
            if (node.module or "").split(".")[0] == "torch" and not _torch_allowed(f"{node.module}.{a.name}"):
                self.add(node, f"imports torch compute `{node.module}.{a.name}`")

    def _check_import(self, node, name: str) -> None:
        if name.split(".")[0] in self.reference_names or name.split(".")[-1] in self.reference_names:
            self.add(node, f"imports the task's reference module `{name}`")
        if name.split(".")[0] in DYNAMIC:
            self.add(node, f"imports `{name}` (code built at run time cannot be checked)")
        if name.split(".")[0] in PROCESS_MODULES:
            self.add(node, f"imports `{name}` (a kernel wrapper has no use for processes, threads or memory tricks)")
        top = name.split(".")[0]
        if top.startswith("kernelgym"):  # the harness's own modules (its inputs module is the reference)
            self.add(node, f"imports `{name}`, one of the grader's own modules")
        elif top and top not in ALLOWED_IMPORTS | self.own_modules | self.reference_names | DYNAMIC | PROCESS_MODULES:
            self.add(node, f"imports `{name}`: a kernel file may import only {', '.join(sorted(ALLOWED_IMPORTS))} "
                           f"and its own editable files")
        elif top in ALLOWED_IMPORTS and (module := _module_in_chain(name)) is not None:
            self.add(node, f"imports the module `{module}` (only {', '.join(sorted(ALLOWED_NAMESPACES))} and the "
                           f"top-level modules may be imported)")

    def visit_Attribute(self, node):
        self._attribute_name(node)
        path = _dotted(node, self.m.torch_names)
        if path is not None:
            if not _torch_allowed(path):
                self.add(node, f"uses torch compute `{path}`")
            return  # the chain is judged whole
        if self._module_chain(node):
            return
        if id(node) not in self._call_funcs and node.attr in _tensor_methods() - METHOD_ALLOWED:
            self.add(node, f"takes the tensor method `.{node.attr}` as a value (a call of it is judged by name)")
        self.generic_visit(node)

    def _attribute_name(self, node: ast.Attribute) -> None:
        """The checks of one attribute's name, wherever it stands in a chain."""
        if node.attr in INTROSPECTION or (node.attr.startswith("__") and node.attr.endswith("__")
                                          and node.attr not in ("__init__", "__name__", "__doc__")):
            self.add(node, f"reaches `{node.attr}` (an object's innards: its class, globals or frame)")
        if node.attr in COMPUTE_METHODS and _dotted(node, self.m.torch_names) is None and not (
                isinstance(node.value, ast.Name) and node.value.id in self.m.module_names):
            self.add(node, f"uses the tensor method `.{node.attr}`, which computes with PyTorch")
        on_os = isinstance(node.value, ast.Name) and node.value.id in self.m.os_names
        if node.attr in REACH_ATTRIBUTES and not (on_os and node.attr in OS_HOST | OS_PROCESS):  # those: just below
            self.add(node, f"reaches `.{node.attr}` (as an attribute it is refused as it is by name: another module's "
                           f"import of it is still it)")
        if isinstance(node.value, ast.Name) and node.value.id in self.m.os_names and node.attr in OS_PROCESS:
            self.add(node, f"uses `os.{node.attr}` (a kernel wrapper has no use for processes)")
        if isinstance(node.value, ast.Name) and node.value.id in self.m.os_names and node.attr in OS_HOST:
            self.add(node, f"uses `os.{node.attr}` (a kernel wrapper has no use for the host's files or environment)")

    def _module_chain(self, node: ast.Attribute) -> bool:
        """Judge a chain of attributes rooted at an imported name (``tl.math.exp``) whole, against
        `ALLOWED_NAMESPACES`; False where `node` is no such chain."""
        parts, root, inner = [], node, []
        while isinstance(root, ast.Attribute):
            parts.append(root.attr)
            inner.append(root)
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in self.m.import_paths):
            return False
        for link in inner[1:]:  # the chain is not visited further: its inner names are checked here
            self._attribute_name(link)
        path = ".".join([self.m.import_paths[root.id], *reversed(parts)])
        if any(p.startswith("_") for p in parts):
            self.add(node, f"reaches `{path}` (a private name of a module)")
        elif path.split(".")[0] not in self.own_modules:
            module = _module_in_chain(path)
            names = path.split(".")
            narrowed = next((".".join(names[:i + 1]) for i in range(1, len(names)) if
                             ".".join(names[:i]) in NAMESPACE_NAMES and names[i] not in NAMESPACE_NAMES[".".join(names[:i])]),
                            None)
            if narrowed is not None:
                self.add(node, f"reaches `{narrowed}` (of {narrowed.rpartition('.')[0]}, only "
                               f"{', '.join(sorted(NAMESPACE_NAMES[narrowed.rpartition('.')[0]]))} may be used)")
            elif module is not None:
                self.add(node, f"reaches the module `{module}` through `{path}` (a module's imports are its attributes;"
                               f" a chain may pass only through {', '.join(sorted(ALLOWED_NAMESPACES))})")
        return True

    def visit_Name(self, node):
        path = self.m.torch_names.get(node.id)
        if path is not None and path != "torch" and not _torch_allowed(path):
            self.add(node, f"uses torch compute `{path}` (imported as `{node.id}`)")
        elif path is not None and isinstance(node.ctx, ast.Load):
            # Reached only outside an attribute chain (chains are judged whole): torch passed around as a value
            # (`T = torch`, `f(torch)`) could be used from anywhere.
            self.add(node, f"uses the module `{path}` as a value (only `{node.id}.<allowed name>` is checked)")
        elif node.id in self.m.plain_modules and isinstance(node.ctx, ast.Load):
            # Reached only outside an attribute chain: a module passed around escapes the chain rules.
            self.add(node, f"uses the module `{node.id}` as a value (only `{node.id}.<allowed name>` is checked)")
        if node.id in NOT_AS_VALUES and isinstance(node.ctx, ast.Load):
            self.add(node, f"uses `{node.id}` as a value (only a direct call with a plain name can be checked)")
        if node.id in DYNAMIC:
            self.add(node, f"uses `{node.id}` (code built at run time cannot be checked)")
        if node.id in HOST_NAMES:
            self.add(node, f"uses `{node.id}` (a kernel wrapper has no use for the host's files or environment)")
        if node.id in self.m.functions:
            self.called.add(node.id)

    def visit_Call(self, node):
        f = node.func
        self._call_funcs.add(id(f))
        if isinstance(f, ast.Name) and f.id in ("getattr", "setattr", "vars", "hasattr") and node.args:
            root = node.args[0]
            name = node.args[1] if len(node.args) > 1 else None
            if _dotted(root, self.m.torch_names) is not None or (isinstance(root, ast.Name) and root.id in self.m.torch_names):
                self.add(node, f"`{f.id}` on a torch module (a computed attribute cannot be checked)")
            elif not (isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value in METHOD_ALLOWED):
                self.add(node, f"`{f.id}` with an attribute name that is not a plain allowed one")
        if isinstance(f, ast.Name) and f.id == "open" or isinstance(f, ast.Attribute) and f.attr in (
                "spec_from_file_location", "read_text", "read_bytes", "open", "load", "exec_module"):
            for arg in ast.walk(node):
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and any(
                        r in arg.value for r in self.reference_names):
                    self.add(node, f"reads the task's reference ({arg.value!r})")
        if isinstance(f, ast.Attribute) and _dotted(f, self.m.torch_names) is None and f.attr not in METHOD_ALLOWED:
            receiver = f.value
            while isinstance(receiver, ast.Attribute):
                receiver = receiver.value
            on_module = isinstance(receiver, ast.Name) and receiver.id in self.m.module_names
            if not on_module:
                self.add(node, f"calls `.{f.attr}()`, which is not an allocation, view or shape method")
        if isinstance(f, ast.Name) and f.id in NOT_AS_VALUES:  # a direct call, judged above: its name is no value
            for part in (*node.args, *node.keywords):
                self.visit(part)
            return
        self.generic_visit(node)

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.MatMult):
            self.add(node, "uses `@` (a PyTorch matmul)")
        self.generic_visit(node)


class _KernelChecker(_PathChecker):
    """Visits a kernel's body (a function decorated with ``triton.jit`` and the like). On a GPU Triton compiles it, but
    on the CPU interpreter it runs as Python, and whatever Python it holds runs with it; it is held to what Triton
    compiles: no imports, no ``global``, and no names but its parameters and the names it assigns, modules, Triton's,
    the file's own functions (their bodies are checked in turn, as kernels or as host code), `KERNEL_BUILTINS` and
    globals bound only to constants (a module-level list of the wrapper's tensors reached from a kernel is refused). The name checks of the
    host path (the reference, `DYNAMIC`, `HOST_NAMES`, torch, `REACH_ATTRIBUTES`) hold here too."""

    def check(self, fn: ast.AST) -> None:
        args = fn.args
        self.locals = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        self.locals |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        self.locals |= {n for part in fn.body for n in _bound_names(part)}
        for part in fn.body:
            self.visit(part)

    def visit_Import(self, node):
        self.add(node, "imports inside a kernel (a kernel's body is Triton code)")
        super().visit_Import(node)

    def visit_ImportFrom(self, node):
        self.add(node, "imports inside a kernel (a kernel's body is Triton code)")
        super().visit_ImportFrom(node)

    def visit_Global(self, node):
        self.add(node, "declares `global`/`nonlocal` names inside a kernel (a kernel's body is Triton code)")

    visit_Nonlocal = visit_Global

    def _attribute_name(self, node: ast.Attribute) -> None:
        if node.attr in INTROSPECTION or (node.attr.startswith("__") and node.attr.endswith("__")):
            self.add(node, f"reaches `{node.attr}` (an object's innards: its class, globals or frame)")
        if node.attr in REACH_ATTRIBUTES or node.attr in OS_HOST | OS_PROCESS and _root_name(node) in self.m.os_names:
            self.add(node, f"reaches `.{node.attr}` inside a kernel")

    def visit_Attribute(self, node):
        self._attribute_name(node)
        path = _dotted(node, self.m.torch_names)
        if path is not None:
            self.add(node, f"uses `{path}` inside a kernel (a kernel's body is Triton code)")
            return
        if self._module_chain(node):
            return
        self.generic_visit(node)

    def visit_Call(self, node):  # the host path's method rules do not apply (`acc.to(tl.float16)` is Triton)
        self.generic_visit(node)

    def visit_Name(self, node):
        super().visit_Name(node)
        if isinstance(node.ctx, ast.Load) and node.id not in self.locals and node.id not in self.m.kernel_globals:
            self.add(node, f"reads `{node.id}` inside a kernel: a kernel reads its parameters, its own names, modules, "
                           f"Triton, its file's functions and constant globals (as Triton compiles it)")


_TENSOR_METHODS: frozenset[str] | None = None


def _tensor_methods() -> frozenset[str]:
    """The public methods of ``torch.Tensor`` (read once from the installed torch)."""
    global _TENSOR_METHODS
    if _TENSOR_METHODS is None:
        import torch
        _TENSOR_METHODS = frozenset(n for n in dir(torch.Tensor)
                                    if not n.startswith("_") and callable(getattr(torch.Tensor, n, None)))
    return _TENSOR_METHODS


def _module_in_chain(path: str) -> str | None:
    """The first module that the dotted `path` (``triton.knobs.re``) reaches past its top-level module and outside
    `ALLOWED_NAMESPACES`, resolved against the installed packages (attribute lookups only; nothing of the candidate
    runs); None where there is none, or where the path does not resolve (then it fails when run)."""
    names = path.split(".")
    try:
        obj = importlib.import_module(names[0])
    except Exception:  # noqa: BLE001 - not installed here: the import itself is judged by ALLOWED_IMPORTS
        return None
    for i in range(1, len(names)):
        try:  # past a module, no property or descriptor runs (triton.runtime.driver.active would load the driver)
            obj = getattr(obj, names[i]) if isinstance(obj, types.ModuleType) else inspect.getattr_static(obj, names[i])
        except Exception:  # noqa: BLE001 - no such attribute
            return None
        prefix = ".".join(names[:i + 1])
        if isinstance(obj, types.ModuleType) and prefix not in ALLOWED_NAMESPACES:
            return prefix
    return None


def _root_name(node: ast.AST) -> str | None:
    """The name an expression such as ``a.b[0].c`` or ``f(x).y`` starts from, or None (a literal, a lambda)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def check_source(files: dict[str, str], entry_point: str, reference: str) -> list[Finding]:
    """Findings of the static provenance check over the candidate's editable Python files.

    Args:
        files: editable file path (relative, ``.py`` only) -> its source text.
        entry_point: ``file.py:function`` of the task.
        reference: the task's reference, ``file.py:function`` (its module must not be imported or read).

    Returns:
        Every refused use on the entry point's path, in file and line order; a file that does not parse is left to
        the compile gate (no finding).
    """
    entry_file, entry_fn = entry_point.split(":")
    ref_module = Path(reference.split(":")[0]).stem
    reference_names = {ref_module, reference.split(":")[0]}
    modules = {}
    findings: list[Finding] = []
    for rel, src in files.items():
        try:
            modules[rel] = _Module(rel, src)
        except SyntaxError:
            continue
        except (RecursionError, MemoryError):  # the parser's own limits: 100,000 nested unary minuses
            findings.append(Finding(rel, 1, TOO_DEEP))
    for rel, m in modules.items():
        try:
            findings += _module_findings(rel, m, entry_file, entry_fn, reference_names,
                                         {Path(r).stem for r in files} - reference_names)
        except RecursionError:  # the visitors recurse over the tree: a tree this deep is refused, not read
            findings.append(Finding(rel, 1, TOO_DEEP))
    unique = {(f.file, f.line, f.what): f for f in findings}
    return sorted(unique.values(), key=lambda f: (f.file, f.line, f.what))


#: The finding for a file whose syntax tree is too deep to check (a review's 800-attribute expression).
TOO_DEEP = "the file's syntax tree is nested too deeply for the static check to read; a kernel needs no such depth"


def _module_findings(rel: str, m: "_Module", entry_file: str, entry_fn: str,
                     reference_names: set[str], own_modules: set[str] = frozenset()) -> list[Finding]:
    """The static check's findings in one parsed file: its module-level code, and every function reached from the
    entry point (in the entry file) or from module-level code."""
    checker = _PathChecker(m, reference_names, own_modules)
    kernels = _KernelChecker(m, reference_names, own_modules)
    kernels.findings, kernels.called = checker.findings, checker.called  # one path, two rule sets
    for name in m.rebound_imports:
        checker.findings.append(Finding(rel, 1, f"binds `{name}` both by an import and otherwise (the check reads an "
                                                f"imported name as that module everywhere in the file)"))
    for stmt in m.tree.body:  # module-level code runs at import
        checker.visit(stmt)
    if rel == entry_file and not any(isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == entry_fn
                                     for st in m.tree.body):
        checker.findings.append(Finding(rel, 1, f"the entry point `{entry_fn}` must be a function defined at the "
                                                f"module's top level"))
    todo = [entry_fn] if rel == entry_file else []
    todo += [n for n in checker.called]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        before = set(checker.called)
        for fn in m.functions.get(name, []):
            if _is_kernel(fn, m.triton_names):
                kernels.check(fn)
                continue
            for part in fn.body:
                checker.visit(part)
        todo += sorted(checker.called - before - seen)
    return checker.findings


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
