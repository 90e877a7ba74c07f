"""Collects every attack file in this folder as a test module.

pytest collects only files named ``test_*.py`` (the default ``python_files``; pyproject.toml keeps it), while an
attack file is named after the attack it performs (``nan_output.py``), as ``kernelgym/grader/defences.py`` names
it. This hook collects them without touching pyproject.toml.

Only files whose module docstring starts with ``Attack:`` are collected, decided by parsing, never by importing:
collecting imports a file, and an attack's payload (code that ptraces pid 1, or writes into it) must never run in
the test process. Payloads therefore live as strings inside their attack file, and a stray ``.py`` left here (an
attack's own artefact, a payload saved by hand) is not run; tests/test_defences.py fails on it instead. Files whose
name starts with ``_`` are helpers; ``test_*.py`` files are collected by pytest itself.
"""
import ast
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MARK = "Attack:"


def is_attack_file(path: Path) -> bool:
    """Whether `path` is an attack file here: ``<attack>.py`` whose module docstring starts with ``Attack:``."""
    if path.suffix != ".py" or path.parent != HERE or path.name == "conftest.py":
        return False
    if path.name.startswith(("_", "test_")):
        return False
    try:
        doc = ast.get_docstring(ast.parse(path.read_text()))
    except (OSError, SyntaxError, ValueError):
        return False
    return bool(doc) and doc.startswith(MARK)


def pytest_collect_file(file_path, parent):
    # A file named on the command line is collected by pytest's own Python plugin, whatever its name.
    if is_attack_file(file_path) and not parent.session.isinitpath(file_path):
        return pytest.Module.from_parent(parent, path=file_path)
    return None
