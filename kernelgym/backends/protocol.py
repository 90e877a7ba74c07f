"""`Backend`: what a language backend module defines, every member of it (the grader, the harness and the build step
read these and nothing else of a backend).

A backend is one module file, standard library and torch only at import: the trusted parent imports it, and the
harness, inside the sandbox, loads the same file by path. kernelgym/backends/triton.py is a commented example;
`kernelgym.backends.register_backend` adds one from outside the package.
"""
from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Protocol, runtime_checkable

from kernelgym.errors import TaskSpecError


@runtime_checkable
class Backend(Protocol):
    """One task language, implemented whole.

    Attributes:
        LANGUAGE: the name task.yaml's ``language`` gives (``triton``, ``cuda``); the module file is ``<LANGUAGE>.py``.
        VENDORS: hardware vendors it runs on: ``nvidia``, ``amd``, ``cpu`` (the CPU interpreter).
        INTERPRETER_ENV: environment variables that run it on the CPU interpreter, or None where it cannot.
        SOURCE_SUFFIXES: suffixes of the editable files the compile gate builds.
        PROMPT: the language part of the task prompt.
        BUILDS: whether the compile gate is a build before any candidate code runs (cuda: a
            `torch.utils.cpp_extension` build, run as ``python <backend>.py build SRC_DIR OUT_DIR FILE...`` in a
            sandbox of its own, kernelgym/grader/build.py; triton: False, its JIT compiles at the first launch).
        STATIC_CHECK: whether kernelgym's static provenance check (kernelgym/grader/provenance.py: Python and C++
            sources) judges the candidate's files before they run.
        BARE_KERNEL_NAMES: whether a compiled kernel carries its source function's bare name and nothing else (the
            outside observer then matches own kernels by exact name; otherwise by name within a mangled one).
        PRELOAD: modules a harness started ahead of its grading imports before it waits (no candidate code in them).
        LaunchCounter: a class, ``LaunchCounter(directory)`` with ``.installed``, ``.count``, ``.reset()`` and
            ``.what``, counting launches of the candidate's own kernels; None where launches cannot be counted.
        load_entry: ``load_entry(entry_point, directory, module_name, build_directory) -> callable``, the function
            the grader calls with the inputs; None: the plain import of ``file.py:function`` from `directory`.
        KERNEL_CACHE_DIR: the compiler's kernel cache directory inside a harness's writable directory (reused across
            gradings for the baseline's kernels), or None where the language keeps no cache.
        KERNEL_CACHE_ENV: the environment variable that points the compiler at that cache, or None.
        KERNEL_ARTIFACTS: suffixes of the cache files that are compiled kernels and their metadata, which the observed
            run may take from the checked run.
        KERNEL_LAUNCHERS: suffixes of the cache files that are host code loaded into the process (shared libraries),
            taken only from a run of the pristine baseline, never from a candidate's.
    """

    LANGUAGE: str
    VENDORS: frozenset[str]
    INTERPRETER_ENV: dict[str, str] | None
    SOURCE_SUFFIXES: tuple[str, ...]
    PROMPT: str
    BUILDS: bool
    STATIC_CHECK: bool
    BARE_KERNEL_NAMES: bool
    PRELOAD: tuple[str, ...]
    LaunchCounter: type | None
    load_entry: Callable[..., Callable] | None
    KERNEL_CACHE_DIR: str | None
    KERNEL_CACHE_ENV: str | None
    KERNEL_ARTIFACTS: tuple[str, ...]
    KERNEL_LAUNCHERS: tuple[str, ...]

    def is_compile_error(self, exc: BaseException) -> bool:
        """Whether an exception raised while running the candidate is a compile failure (fails the compile gate)."""

    def own_kernel_names(self, sources: dict[str, str]) -> set[str]:
        """The names the candidate's kernels have in its sources ({path: text}), by which the outside observer
        (kernelgym/grader/observer.py) tells its own kernels from library ones."""

    def toolchain_id(self) -> str:
        """What identifies the compiler toolchain (part of the build cache key); for a backend that does not build,
        any constant."""

    def build(self, src: Path, out: Path, files: list[str]) -> int:
        """Build `files` (relative to `src`) into `out`, leaving the file ``BUILT`` there on success; returns an exit
        code. A backend that does not build returns nonzero (it is never called)."""


#: Every member `Backend` declares, in its order.
MEMBERS: tuple[str, ...] = (*Backend.__annotations__,
                            *(n for n, v in vars(Backend).items() if callable(v) and not n.startswith("_")))


def check_backend(module: ModuleType | Any, where: str | Path) -> None:
    """Refuse a backend module that lacks a member of `Backend` or whose LANGUAGE is not its file's name.

    Raises:
        TaskSpecError: a member is missing or of the wrong kind; the message names each one and `where`.
    """
    missing = [name for name in MEMBERS if not hasattr(module, name)]
    if missing:
        raise TaskSpecError(f"backend {where} does not implement {', '.join(missing)} (every member of "
                            f"kernelgym.backends.protocol.Backend: docs/TASKS.md, 'Adding a language')")
    not_callable = [name for name in MEMBERS if name in vars(Backend) and not callable(getattr(module, name))]
    optional = [name for name in ("LaunchCounter", "load_entry")
                if getattr(module, name) is not None and not callable(getattr(module, name))]
    if not_callable or optional:
        raise TaskSpecError(f"backend {where}: {', '.join(not_callable + optional)} must be callable")
    kinds = {"LANGUAGE": str, "PROMPT": str, "BUILDS": bool, "STATIC_CHECK": bool, "BARE_KERNEL_NAMES": bool,
             "VENDORS": (frozenset, set), "SOURCE_SUFFIXES": tuple, "PRELOAD": tuple, "KERNEL_ARTIFACTS": tuple,
             "KERNEL_LAUNCHERS": tuple, "INTERPRETER_ENV": (dict, type(None)), "KERNEL_CACHE_DIR": (str, type(None)),
             "KERNEL_CACHE_ENV": (str, type(None))}
    wrong = [f"{name} is {type(getattr(module, name)).__name__}" for name, kind in kinds.items()
             if not isinstance(getattr(module, name), kind)]
    if wrong:
        raise TaskSpecError(f"backend {where}: {'; '.join(wrong)} (kernelgym.backends.protocol.Backend gives each "
                            f"member's type)")
    if "cpu" in module.VENDORS and module.INTERPRETER_ENV is None:
        raise TaskSpecError(f"backend {where}: VENDORS holds 'cpu' (the CPU interpreter) but INTERPRETER_ENV is None; "
                            f"give the environment that runs it there ({{}} where none is needed)")
    if Path(str(where)).suffix == ".py" and module.LANGUAGE != Path(str(where)).stem:
        raise TaskSpecError(f"backend {where}: LANGUAGE is {module.LANGUAGE!r}, but the file must be named after its "
                            f"language ({module.LANGUAGE}.py)")
