"""Loads a task's reference and input builder from its pristine directory, in the trusted process."""
from __future__ import annotations

import importlib.util
import sys
from typing import Callable

from kernelgym.task import Task

_cache: dict[str, tuple[Callable, Callable]] = {}


def _load(task: Task, ref: str) -> Callable:
    file, func = ref.split(":")
    name = f"kernelgym_task_{task.spec.language}_{task.spec.id}_{file.removesuffix('.py').replace('/', '_')}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, task.root / file)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return getattr(sys.modules[name], func)


def load_reference(task: Task) -> tuple[Callable, Callable]:
    """(reference, input_builder) functions of `task`, imported from the task directory (never a workspace)."""
    key = str(task.root)
    if key not in _cache:
        _cache[key] = (_load(task, task.spec.reference), _load(task, task.spec.input_builder))
    return _cache[key]
