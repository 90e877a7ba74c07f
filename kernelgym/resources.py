"""Where the built-in tasks, policies and hardware profiles are.

They live in the repository's top-level ``tasks/``, ``policies/`` and ``hardware/`` folders, which the build maps
to the packages ``kernelgym.tasks``, ``kernelgym.policies`` and ``kernelgym.hardware_profiles`` (pyproject.toml's
``package-dir``; ``kernelgym.hardware`` is the module that reads the profiles). Each folder holds an
``__init__.py`` so that it is a regular package and `importlib.resources` gives its real directory: the checkout's
folder under an editable install, the copy inside ``site-packages/kernelgym/`` under ``pip install .`` or a wheel.
A checkout used from ``PYTHONPATH`` without installing finds the folders beside the package.
"""
from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from kernelgym.errors import KernelGymError

#: The package each built-in data folder is installed as, by the folder's name in the repository.
DATA_PACKAGES = {"tasks": "kernelgym.tasks", "policies": "kernelgym.policies",
                 "hardware": "kernelgym.hardware_profiles"}


#: The repository root when kernelgym runs from a source checkout (the parent of the package directory).
CHECKOUT_ROOT = Path(__file__).resolve().parent.parent


class DataFolderMissingError(KernelGymError):
    """A built-in data folder (tasks, policies, hardware profiles) is not where the installed package says."""


def builtin_folder(name: str) -> Path:
    """The directory of the built-in data folder `name` ("tasks", "policies" or "hardware"), resolved.

    Raises:
        KeyError: `name` is not one of `DATA_PACKAGES`.
        DataFolderMissingError: its package does not import as a directory and no checkout's folder is beside the
            package, e.g. an editable install made before the folders moved to the top level (its import finder
            still points into ``kernelgym/``).
    """
    package = DATA_PACKAGES[name]
    try:
        folder = resources.files(package)
    except (ModuleNotFoundError, NotADirectoryError) as e:
        folder, problem = None, f"{type(e).__name__}: {e}"
    else:
        problem = f"found {folder!r}, not a directory"
    if isinstance(folder, Path) and folder.is_dir():
        return folder.resolve()
    # A source checkout on PYTHONPATH, never installed: no finder maps the package, the folder sits beside kernelgym/.
    checkout = CHECKOUT_ROOT / name
    if (checkout / "__init__.py").is_file():
        return checkout.resolve()
    raise DataFolderMissingError(
        f"kernelgym's built-in {name} folder (package {package}) is missing: {problem}. Expected the repository's "
        f"{name}/ folder (editable install) or site-packages/kernelgym/{package.rpartition('.')[2]}/ (wheel); "
        f"reinstall kernelgym (`pip install -e .` in a checkout, which `bash .ci/setup` does)")


def cache_home() -> Path:
    """``$KERNELGYM_CACHE_DIR`` (default ``~/.cache/kernelgym``): the host's cache of builds, tracers, gradings and
    replays; every cache of the project lives under it."""
    return Path(os.environ.get("KERNELGYM_CACHE_DIR", Path.home() / ".cache" / "kernelgym"))
