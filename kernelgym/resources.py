"""Where the built-in tasks, policies and hardware profiles are.

They live in the repository's top-level ``tasks/``, ``policies/`` and ``hardware/`` folders, which the build maps
to the packages ``kernelgym.tasks``, ``kernelgym.policies`` and ``kernelgym.hardware_profiles`` (pyproject.toml's
``package-dir``; ``kernelgym.hardware`` is the module that reads the profiles). Each folder holds an
``__init__.py`` so that it is a regular package and `importlib.resources` gives its real directory: the checkout's
folder under an editable install, the copy inside ``site-packages/kernelgym/`` under ``pip install .`` or a wheel.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from kernelgym.errors import KernelGymError

#: The package each built-in data folder is installed as, by the folder's name in the repository.
DATA_PACKAGES = {"tasks": "kernelgym.tasks", "policies": "kernelgym.policies",
                 "hardware": "kernelgym.hardware_profiles"}


class DataFolderMissingError(KernelGymError):
    """A built-in data folder (tasks, policies, hardware profiles) is not where the installed package says."""


def builtin_folder(name: str) -> Path:
    """The directory of the built-in data folder `name` ("tasks", "policies" or "hardware"), resolved.

    Raises:
        KeyError: `name` is not one of `DATA_PACKAGES`.
        DataFolderMissingError: its package does not import as a directory, e.g. an editable install made before
            the folders moved to the top level (its import finder still points into ``kernelgym/``).
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
    raise DataFolderMissingError(
        f"kernelgym's built-in {name} folder (package {package}) is missing: {problem}. Expected the repository's "
        f"{name}/ folder (editable install) or site-packages/kernelgym/{package.rpartition('.')[2]}/ (wheel); "
        f"reinstall kernelgym (`pip install -e .` in a checkout, which `bash .ci/setup` does)")
