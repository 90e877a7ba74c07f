"""Triton backend: kernels written with ``@triton.jit`` in Python files, compiled by Triton's JIT on first call.

Standard library and torch only at import (the harness loads this file by path inside the sandbox; triton is
imported where it is used). See ``kernelgym/backends/__init__.py`` for what a backend defines.
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
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(_ends_in_jit(d) for d in node.decorator_list):
                names.add(node.name)
    return names


def _ends_in_jit(decorator):
    import ast
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(node, ast.Attribute) and node.attr == "jit") or (isinstance(node, ast.Name) and node.id == "jit")


def is_compile_error(exc):
    """Triton raises CompilationError subclasses when a @triton.jit function does not compile."""
    return any("CompilationError" in cls.__name__ for cls in type(exc).__mro__)


class LaunchCounter:
    """Counts launches of ``@triton.jit`` functions defined in files under `directory` (the candidate's), by wrapping
    ``JITFunction.run`` and the interpreter's ``InterpretedFunction.run``. `installed` is False where neither can be
    wrapped (then nothing can be required of the candidate).

    A candidate that launches a token kernel and computes with PyTorch still counts; this blocks the plain
    fallback only."""

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
        for cls in classes:
            def run(self, *args, _orig=cls.run, **kwargs):
                code = getattr(getattr(self, "fn", None), "__code__", None)
                if not kwargs.get("warmup") and code is not None and code.co_filename.startswith(directory):
                    counter.count += 1
                return _orig(self, *args, **kwargs)
            cls.run = run
        self.installed = bool(classes)

    def reset(self):
        self.count = 0
