"""Language backends: one module per task language (``triton.py``, ``cuda.py``), chosen by `language` in task.yaml.

A backend module says, for its language, how the candidate is built (the compile gate), how its entry point is
loaded, how the grader knows the candidate's own kernels did the work, and what the prompt says about the language.
Each module is standard library plus torch only: the trusted parent imports it as ``kernelgym.backends.<language>``,
and the harness, inside the sandbox, loads the same file by path. Adding a language is adding one module here.

What every backend module defines (see triton.py for a commented example):

- ``LANGUAGE`` (str), ``VENDORS`` (frozenset of hardware vendors it runs on: ``nvidia``, ``amd``, ``cpu`` for the
  CPU interpreter), ``INTERPRETER_ENV`` (environment for the CPU interpreter, or None where there is none),
  ``SOURCE_SUFFIXES`` (editable files the compile gate builds), ``PROMPT`` (the language part of the prompt).
- ``BUILDS`` (bool): whether the compile gate is a build before any candidate code runs (cuda: a
  `torch.utils.cpp_extension` build; triton: False, Triton's JIT compiles at the first call). A backend that builds
  also defines ``toolchain_id() -> str`` (part of the build cache key) and runs as a script,
  ``python <backend>.py build SRC_DIR OUT_DIR FILE...``, which builds FILEs from SRC_DIR into OUT_DIR and leaves
  the file ``BUILT`` there on success (see kernelgym/grader/build.py, which runs it in a sandbox of its own).
- ``load_entry(entry_point, directory, module_name, build_directory)``, optional: the callable the grader calls with the
  inputs (default: import ``file.py:function``, `protocol.load_function`).
- ``LaunchCounter(directory)``: counts launches of the candidate's own kernels (``.installed``, ``.count``,
  ``.reset()``, ``.what`` naming them in messages); absent where the backend cannot count them.
- ``is_compile_error(exc) -> bool``: whether an exception raised while running is a compile failure.
- ``own_kernel_names(sources) -> set[str]``: the names the candidate's kernels have in its sources ({path: text}), by
  which the outside observer (kernelgym/grader/observer.py) tells its own kernels from library ones.
- ``PRELOAD`` (tuple of module names), optional: imported by an observed run started ahead, before it waits.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from kernelgym.errors import TaskSpecError

#: Where the backend modules live (bound read-only into the grading sandbox).
BACKENDS_DIR = Path(__file__).resolve().parent


def available_languages() -> list[str]:
    """Every language with a backend module, by listing this folder."""
    return sorted(p.stem for p in BACKENDS_DIR.glob("*.py") if not p.stem.startswith("_"))


def get_backend(language: str) -> ModuleType:
    """The backend module of `language`.

    Raises:
        TaskSpecError: no backend for it; the message lists the languages that have one.
    """
    if language not in available_languages():
        raise TaskSpecError(f"no backend for language {language!r}; backends exist for "
                            f"{', '.join(available_languages())} (kernelgym/backends/<language>.py)")
    return importlib.import_module(f"kernelgym.backends.{language}")


def backend_path(language: str) -> Path:
    """The backend module's file, for the harness to load by path."""
    return BACKENDS_DIR / f"{language}.py"
