"""Language backends: one module per task language (``triton.py``, ``cuda.py``), chosen by `language` in task.yaml.

A backend module implements `kernelgym.backends.protocol.Backend` whole: how the candidate's sources are statically
checked, built, cached and launched, whether it runs on the CPU interpreter, which vendors it serves, which kernels
count as its own for the observer, and what the prompt says about the language. Each module is standard library plus
torch only: the trusted parent imports it, and the harness, inside the sandbox, loads the same file by path (bound
read-only there). Adding a language is adding one module: here, or anywhere with `register_backend` or
``$KERNELGYM_BACKENDS_PATH`` (folders of ``<language>.py`` files, separated by ``os.pathsep``).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType

from kernelgym.backends.protocol import Backend, check_backend
from kernelgym.errors import TaskSpecError

#: Where the built-in backend modules live (bound read-only into the grading sandbox).
BACKENDS_DIR = Path(__file__).resolve().parent
#: Folders of backend modules from outside the package, searched after the built-in ones.
BACKENDS_PATH_ENV = "KERNELGYM_BACKENDS_PATH"
#: Modules of this folder that are not backends.
_NOT_BACKENDS = {"protocol"}
#: Backends registered with `register_backend`: language -> module file.
_REGISTERED: dict[str, Path] = {}
_LOADED: dict[Path, ModuleType] = {}

__all__ = ["BACKENDS_DIR", "Backend", "available_languages", "backend_path", "get_backend", "register_backend"]


def _outside_backends() -> dict[str, Path]:
    """Backends from outside the package: $KERNELGYM_BACKENDS_PATH's folders, then `register_backend`'s files."""
    found: dict[str, Path] = {}
    for folder in filter(None, os.environ.get(BACKENDS_PATH_ENV, "").split(os.pathsep)):
        for path in sorted(Path(folder).glob("*.py")):
            if not path.stem.startswith("_") and path.stem not in _NOT_BACKENDS:
                found.setdefault(path.stem, Path(os.path.abspath(path)))  # named as looked up: no link resolved
    return {**found, **_REGISTERED}


def register_backend(path: str | Path) -> str:
    """Add the backend module at `path` (``<language>.py``) for this process; returns its language.

    The module is imported and checked now; the harness loads the same file by path inside the sandbox (the file is
    bound read-only there), so it must be standard library and torch only at import.

    Raises:
        TaskSpecError: no such file, it does not import, it lacks a member of `Backend`, or it would replace a
            built-in language.
    """
    path = Path(os.path.abspath(path))  # named as given: the file's name is its language, even through a link
    if not path.is_file() or path.suffix != ".py":
        raise TaskSpecError(f"register_backend({str(path)!r}): not a .py file")
    if (BACKENDS_DIR / path.name).is_file() and path != BACKENDS_DIR / path.name:
        raise TaskSpecError(f"register_backend({str(path)!r}): {path.stem} is a built-in backend; name the file after "
                            f"another language")
    _load(path)
    _REGISTERED[path.stem] = path
    return path.stem


def available_languages() -> list[str]:
    """Every language with a backend module: the built-in ones, $KERNELGYM_BACKENDS_PATH's and registered ones."""
    builtin = {p.stem for p in BACKENDS_DIR.glob("*.py") if not p.stem.startswith("_")} - _NOT_BACKENDS
    return sorted(builtin | set(_outside_backends()))


def backend_path(language: str) -> Path:
    """The backend module's file, for the harness and the build step to load by path.

    Raises:
        TaskSpecError: no backend for `language`; the message lists the languages that have one.
    """
    if not isinstance(language, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", language):
        raise TaskSpecError(f"no backend for language {language!r}: a language name is lower-case letters, digits "
                            f"and _ (the backend's file is <language>.py)")
    builtin = BACKENDS_DIR / f"{language}.py"
    if language not in _NOT_BACKENDS and builtin.is_file():
        return builtin
    outside = _outside_backends().get(language)
    if outside is None:
        raise TaskSpecError(f"no backend for language {language!r}; backends exist for "
                            f"{', '.join(available_languages())} (kernelgym/backends/<language>.py, "
                            f"kernelgym.backends.register_backend or ${BACKENDS_PATH_ENV})")
    return outside


def _load(path: Path) -> ModuleType:
    if path not in _LOADED:
        if path.parent == BACKENDS_DIR:
            module = importlib.import_module(f"kernelgym.backends.{path.stem}")
        else:
            name = f"kernelgym_backend_{path.stem}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except (Exception, SystemExit) as e:  # a user's file: any error is its own, reported with its path
                raise TaskSpecError(f"backend {path} does not import: {type(e).__name__}: {e}") from e
            sys.modules[name] = module
        check_backend(module, path)
        _LOADED[path] = module
    return _LOADED[path]


def get_backend(language: str) -> Backend:
    """The backend module of `language`, checked to implement `Backend` whole.

    Raises:
        TaskSpecError: no backend for it (the message lists the languages that have one), or its module lacks a
            member of `Backend` (named).
    """
    return _load(backend_path(language))
