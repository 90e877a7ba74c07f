"""Triton backend: kernels written with ``@triton.jit`` in Python files, compiled by Triton's JIT on first call.

Standard library and torch only at import (the harness loads this file by path inside the sandbox; triton is
imported where it is used). Every member of `kernelgym.backends.protocol.Backend` is defined here.
"""
from __future__ import annotations

LANGUAGE = "triton"
VENDORS = frozenset({"nvidia", "amd", "cpu"})
"""Triton compiles for NVIDIA and AMD GPUs, and runs on the CPU interpreter."""
INTERPRETER_ENV = {"TRITON_INTERPRET": "1"}
SOURCE_SUFFIXES = (".py",)
BARE_KERNEL_NAMES = True
"""A compiled Triton kernel carries its function's name and nothing else (no namespace, template or parameters): the
outside observer counts a kernel as the candidate's own only by that exact name."""
PRELOAD = ("triton", "triton.language")
"""Modules a harness started ahead of its grading imports before it waits (no candidate code in them)."""
BUILDS = False
"""Triton's JIT compiles each kernel at its first launch (inside the check): no build step."""
STATIC_CHECK = True
"""The Python sources are judged by kernelgym's static provenance check before they run."""
load_entry = None
"""The entry point is a plain ``file.py:function`` import from the grading directory."""
KERNEL_CACHE_DIR = ".triton-cache"
"""Triton's kernel cache in a harness's writable directory: the observed run finds there what the checked run
compiled, and later gradings the pristine baseline's kernels."""
KERNEL_CACHE_ENV = "TRITON_CACHE_DIR"
KERNEL_ARTIFACTS = (".cubin", ".hsaco", ".ptx", ".amdgcn", ".json", ".ttir", ".ttgir", ".llir", ".source")
"""Compiled kernels and their metadata: what the observed run may take from the checked run's cache."""
KERNEL_LAUNCHERS = (".so",)
"""Triton's host launchers and utilities: shared libraries loaded into the process (a candidate could have replaced
them with code of its own), so taken only from a run of the pristine baseline."""
PROMPT = ("Language: Triton (`@triton.jit` kernels launched from Python). The first call compiles each kernel; a "
          "compile error fails the compile gate. Keep the kernels vendor-neutral: no NVIDIA-only or AMD-only "
          "launch options unless the hardware section lists them.")


def own_kernel_names(sources):
    """Names of the ``@triton.jit`` functions (decorated with anything ending in ``jit``, also under autotune) in the
    Python `sources` ({path: text}): Triton names each compiled kernel after its function, and the outside observer
    (kernelgym/grader/observer.py) counts a kernel as the candidate's own by that name. Files that do not parse name
    none."""
    import ast
    names = set()
    for text in sources.values():
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # the compile gate or the static check says why
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(_ends_in_jit(d) for d in node.decorator_list):
                names.add(node.name)
    return names


def _ends_in_jit(decorator):
    import ast
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(node, ast.Attribute) and node.attr == "jit") or (isinstance(node, ast.Name) and node.id == "jit")


def toolchain_id():
    """Triton builds nothing ahead (BUILDS is False): no build cache key needs it."""
    return "triton-jit"


def build(src, out, files):
    """Never called: Triton has no build step (BUILDS is False)."""
    print("the triton backend has no build step")
    return 1


def is_compile_error(exc):
    """Triton raises CompilationError subclasses when a @triton.jit function does not compile. On the CPU
    interpreter the same checks (triton.language's semantic analysis: a non-power-of-2 arange, mismatched shapes)
    raise inside triton.language as they run, wrapped in an InterpreterError: that counts as well, since on a GPU
    it is a CompilationError and the compile gate fails."""
    if any("CompilationError" in cls.__name__ for cls in type(exc).__mro__):
        return True
    cause = exc.__cause__
    if type(exc).__name__ != "InterpreterError" or cause is None or cause.__traceback__ is None:
        return False
    import traceback
    frames = traceback.extract_tb(cause.__traceback__)
    return bool(frames) and "/triton/language/" in frames[-1].filename.replace("\\", "/")


def launch_argument_checker():
    """A function ``check(kernel, args, kwargs)`` that raises TypeError, naming the parameter, for a launch argument
    of `kernel` (a JITFunction or InterpretedFunction) that is not a plain value: exactly a ``torch.Tensor`` (not a
    subclass), an int, float, bool, str or None, a torch or Triton dtype, a ``tl.constexpr`` of one of those, or a
    plain tuple of such values (Triton's tuple arguments, whose tensors become pointers); and Triton's own wrappers of
    a plain tensor (``triton.reinterpret``'s TensorWrapper, a TensorDescriptor). A tensor for a ``tl.constexpr``
    parameter is refused too. Keyword arguments that name no parameter are launch options (num_warps, num_stages,
    grid...) and are left to Triton.

    Why: on the CPU interpreter a kernel's body runs as Python and gets every argument that is not a tensor or a
    tuple as it is (a list of tensors, an object), on which it could compute with PyTorch or Python. Types are bound
    here, when the counter is installed, before the checked calls."""
    import torch
    import triton.language as tl
    from triton.runtime.jit import TensorWrapper, _normalize_ty
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:  # older Triton
        TensorDescriptor = None
    tensor, torch_dtype, tl_dtype, constexpr = torch.Tensor, torch.dtype, tl.dtype, tl.constexpr
    scalars = (int, float, bool, str, type(None))

    def scalar(v):
        return type(v) in scalars or type(v) is torch_dtype or isinstance(v, tl_dtype)

    def plain(v, is_constexpr, depth=0):
        if scalar(v):
            return True
        if type(v) is constexpr:
            return scalar(v.value)
        if type(v) is tuple and depth < 8:
            return all(plain(x, is_constexpr, depth + 1) for x in v)
        if is_constexpr:
            return False
        if type(v) is tensor:
            return True
        if type(v) is TensorWrapper:
            return type(v.base) is tensor and isinstance(v.dtype, tl_dtype)
        if TensorDescriptor is not None and type(v) is TensorDescriptor:
            return (type(v.base) is tensor and all(type(x) is int for part in (v.shape, v.strides, v.block_shape)
                                                   for x in part) and type(v.padding) is str)
        return False

    def check(kernel, args, kwargs):
        names = list(getattr(kernel, "arg_names", ()))
        fn = getattr(kernel, "fn", None)
        annotations = getattr(fn, "__annotations__", {}) or {}
        const = {n for n in names if _normalize_ty(annotations.get(n)) == "constexpr"}
        given = [(names[i] if i < len(names) else f"#{i}", v) for i, v in enumerate(args)]
        given += [(k, v) for k, v in kwargs.items() if k in names]
        for name, value in given:
            if not plain(value, name in const):
                what = f"{type(value).__module__}.{type(value).__qualname__}"
                raise TypeError(f"launch of Triton kernel {getattr(fn, '__name__', '?')!r}: parameter {name!r} got a "
                                f"{what}{' (a tensor for a tl.constexpr)' if name in const else ''}; a kernel takes "
                                f"plain torch.Tensor, int, float, bool, str, None, dtype or tl.constexpr arguments, "
                                f"or tuples of them (not lists, not tensor subclasses)")
    return check


class LaunchCounter:
    """Counts launches of ``@triton.jit`` functions defined in files under `directory` (the candidate's), by wrapping
    ``JITFunction.run`` and the interpreter's ``InterpretedFunction.run``, and refuses their launches with an argument
    that is not a plain value (`launch_argument_checker`: TypeError). `installed` is False where neither can be
    wrapped (then nothing can be required of the candidate).

    A candidate that launches a token kernel and computes with PyTorch still counts; this blocks the plain
    fallback only (the harness's dynamic check, where it runs, sees the PyTorch work)."""

    what = "Triton kernel"

    def __init__(self, directory):
        self.count = 0
        classes = []
        try:
            from triton.runtime.jit import JITFunction
            classes.append(JITFunction)
        except ImportError:
            pass
        try:
            from triton.runtime.interpreter import InterpretedFunction
            classes.append(InterpretedFunction)
        except ImportError:
            pass
        counter = self
        check = launch_argument_checker() if classes else None
        for cls in classes:
            def run(self, *args, _orig=cls.run, **kwargs):
                code = getattr(getattr(self, "fn", None), "__code__", None)
                if code is not None and code.co_filename.startswith(directory):
                    check(self, args, kwargs)
                    if not kwargs.get("warmup"):
                        counter.count += 1
                return _orig(self, *args, **kwargs)
            cls.run = run
        self.installed = bool(classes)

    def reset(self):
        self.count = 0
