"""The wheel carries every data folder a pip install needs: the top-level tasks/, policies/ and hardware/ (shipped as
kernelgym.tasks, kernelgym.policies and kernelgym.hardware_profiles), the workspace tools and the grader's files
(package data, not modules, so a missing glob drops them silently); and the wheel, installed outside the checkout,
finds the same tasks, policies and profiles and grades a task."""
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import kernelgym
from kernelgym import resources
from kernelgym.discovery import discover_tasks
from kernelgym.hardware import DEFAULT_HARDWARE_ROOT, all_profiles
from kernelgym.policy import DEFAULT_POLICIES_ROOT, available_policies
from kernelgym.task import DEFAULT_TASKS_ROOT

REPO = Path(__file__).resolve().parents[1]
PACKAGE = Path(kernelgym.__file__).resolve().parent
# Build outputs and local state that never belong in the copy the wheel is built from.
IGNORED = shutil.ignore_patterns(".venv", ".git", ".agents", "build", "dist", "*.egg-info", "__pycache__", "*.pyc",
                                 ".pytest_cache", "kernelgym-runs", "runs")


def _files(folder: Path, member: str) -> set[str]:
    """Files under `folder`, as the wheel members they become (under `member`, e.g. ``kernelgym/tasks``)."""
    return {f"{member}/{p.relative_to(folder)}" for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # Built from a copy: an in-tree build writes build/ and *.egg-info into the checkout others work in.
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=IGNORED)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp / "out"), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = (tmp / "out").glob("kernelgym-*.whl")
    return built


@pytest.fixture(scope="module")
def wheel_names(wheel) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        return set(z.namelist())


def test_the_data_folders_are_the_checkouts_top_level():
    # The editable install this suite runs under finds the repository's folders, not copies.
    assert (DEFAULT_TASKS_ROOT, DEFAULT_POLICIES_ROOT, DEFAULT_HARDWARE_ROOT) == (REPO / "tasks", REPO / "policies",
                                                                                  REPO / "hardware")


def test_a_checkout_on_pythonpath_finds_the_folders_beside_the_package(monkeypatch):
    # Found on the H200, where kernelgym runs from the copied checkout on PYTHONPATH: no finder maps kernelgym.tasks.
    monkeypatch.setitem(resources.DATA_PACKAGES, "tasks", "kernelgym.no_such_folder")
    assert resources.builtin_folder("tasks") == REPO / "tasks"


def test_a_data_folder_that_does_not_import_says_how_to_reinstall(monkeypatch, tmp_path):
    # What an editable install made before the folders moved shows: its finder maps kernelgym.tasks nowhere (and
    # the package is not in a checkout).
    monkeypatch.setitem(resources.DATA_PACKAGES, "tasks", "kernelgym.no_such_folder")
    monkeypatch.setattr(resources, "CHECKOUT_ROOT", tmp_path)
    with pytest.raises(resources.DataFolderMissingError, match=re.escape("(package kernelgym.no_such_folder) is "
                                                                         "missing: ModuleNotFoundError")) as info:
        resources.builtin_folder("tasks")
    assert "pip install -e ." in str(info.value)


def test_wheel_has_every_task_policy_and_profile_file(wheel_names):
    tasks = _files(REPO / "tasks", "kernelgym/tasks")
    assert "kernelgym/tasks/triton/rmsnorm/task.yaml" in tasks and "kernelgym/tasks/cuda/gelu/kernel.cu" in tasks
    policies = _files(REPO / "policies", "kernelgym/policies")
    assert {"kernelgym/policies/tuner/policy.py", "kernelgym/policies/tuner/rewrites/rmsnorm_one_pass.py"} <= policies
    profiles = _files(REPO / "hardware", "kernelgym/hardware_profiles")
    assert {"kernelgym/hardware_profiles/h200.yaml", "kernelgym/hardware_profiles/h200.md"} <= profiles
    for files in (tasks, policies, profiles):
        assert files <= wheel_names, sorted(files - wheel_names)


def test_wheel_has_every_module_and_file_of_the_package(wheel_names):
    # pyproject.toml lists kernelgym's packages by name: a subpackage left out of that list fails here.
    package = _files(PACKAGE, "kernelgym")
    assert {"kernelgym/grader/harness.py", "kernelgym/grader/kernel_trace.cpp", "kernelgym/validate.py",
            "kernelgym/workspace_tools/check.py"} <= package
    assert package <= wheel_names, sorted(package - wheel_names)


def test_wheel_has_no_caches(wheel_names):
    assert not [n for n in wheel_names if "__pycache__" in n or n.endswith(".pyc")]


# Run by the installed wheel, from a folder outside the checkout: what it finds, and one Triton grade.
INSTALLED = r"""
import json, sys
from pathlib import Path
import gymnasium as gym
import kernelgym
from kernelgym import resources
from kernelgym.discovery import discover_tasks
from kernelgym.hardware import DEFAULT_HARDWARE_ROOT, all_profiles
from kernelgym.policy import DEFAULT_POLICIES_ROOT, available_policies
from kernelgym.task import DEFAULT_TASKS_ROOT

run_dir = Path(sys.argv[1])
# A cuda env is made (its task loads, its hardware is an NVIDIA profile) but not reset: that needs its toolchain.
cuda = gym.make("KernelArena/cuda-gelu-v0", run_dir=run_dir, hardware=all_profiles()["h200"]).unwrapped
triton = gym.make("KernelArena/triton-rmsnorm-v0", run_dir=run_dir, hardware="cpu-interpreter").unwrapped
triton.reset(seed=0)
_, reward, terminated, _, info = triton.step({"kind": "submit"})
triton.close()
print(json.dumps({
    "package": kernelgym.__file__, "roots": [str(DEFAULT_TASKS_ROOT), str(DEFAULT_POLICIES_ROOT),
                                             str(DEFAULT_HARDWARE_ROOT)],
    "env_ids": sorted(i for i in gym.registry if i.startswith("KernelArena/")),
    "tasks": sorted(discover_tasks()), "policies": available_policies(), "profiles": sorted(all_profiles()),
    "cuda": [str(cuda.task.root), cuda.task.spec.language], "reward": reward, "terminated": terminated,
    "correct": info["grade"]["correct"]}))
"""


def test_the_wheel_installed_outside_the_checkout_finds_everything_and_grades(wheel, tmp_path, require_bwrap):
    target, outside = tmp_path / "site", tmp_path / "elsewhere"
    outside.mkdir()
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
                           "--disable-pip-version-check", "--target", str(target), str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # This venv supplies the dependencies; PYTHONPATH puts the installed wheel ahead of the editable checkout.
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGYM_") or k == "KERNELGYM_PRIVATE_DIR"}
    env["PYTHONPATH"] = str(target)
    proc = subprocess.run([sys.executable, "-c", INSTALLED, str(tmp_path / "runs")], cwd=outside, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    installed = target / "kernelgym"
    assert Path(found["package"]).resolve() == installed / "__init__.py"
    assert found["roots"] == [str(installed / d) for d in ("tasks", "policies", "hardware_profiles")]
    # The same tasks, policies and profiles as the checkout's: 32, 7 and 5 when this was written.
    builtin = sorted(discover_tasks([DEFAULT_TASKS_ROOT]))
    assert found["tasks"] == builtin and len(builtin) >= 32
    assert len(found["env_ids"]) == len(builtin)
    assert found["policies"] == sorted(available_policies()) and len(found["policies"]) >= 7
    assert found["profiles"] == sorted(all_profiles()) and len(found["profiles"]) >= 5
    assert found["cuda"] == [str(installed / "tasks" / "cuda" / "gelu"), "cuda"]
    assert found["terminated"] and found["correct"] and found["reward"] == 120.0
