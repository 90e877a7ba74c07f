"""The wheel carries every data folder a pip install needs: tasks, policies, hardware profiles, workspace tools and
the grader's harness (they are package data, not Python modules, so a missing glob drops them silently)."""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import kernelgym

REPO = Path(__file__).resolve().parents[1]
PACKAGE = Path(kernelgym.__file__).resolve().parent
# Build outputs and local state that never belong in the copy the wheel is built from.
IGNORED = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", "*.pyc",
                                 ".pytest_cache", "kernelgym-runs", "runs")


def _package_files(folder: Path) -> set[str]:
    """Files under `folder`, as wheel member names (``kernelgym/...``), caches left out."""
    return {str(p.relative_to(PACKAGE.parent)) for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> set[str]:
    # Built from a copy: an in-tree build writes build/ and *.egg-info into the checkout others work in.
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=IGNORED)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp / "out"), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = (tmp / "out").glob("kernelgym-*.whl")
    with zipfile.ZipFile(wheel) as z:
        return set(z.namelist())


def test_wheel_has_every_task_file(wheel_names):
    tasks = _package_files(PACKAGE / "tasks")
    assert any(n.endswith("/task.yaml") for n in tasks)
    assert tasks <= wheel_names, sorted(tasks - wheel_names)


def test_wheel_has_every_policy_folder(wheel_names):
    policies = _package_files(PACKAGE / "policies")
    assert {"kernelgym/policies/tuner/policy.py", "kernelgym/policies/tuner/config.yaml"} <= policies
    assert policies <= wheel_names, sorted(policies - wheel_names)


def test_wheel_has_every_profile_with_its_document(wheel_names):
    ymls = sorted((PACKAGE / "profiles").glob("*.yaml"))
    assert ymls
    for yml in ymls:
        assert f"kernelgym/profiles/{yml.name}" in wheel_names
        assert f"kernelgym/profiles/{yml.stem}.md" in wheel_names, f"{yml.stem}.md missing from the wheel"


def test_wheel_has_workspace_tools_and_harness(wheel_names):
    tools = {f"kernelgym/workspace_tools/{p.name}" for p in (PACKAGE / "workspace_tools").glob("*.py")}
    assert tools and tools <= wheel_names, sorted(tools - wheel_names)
    assert "kernelgym/grader/harness.py" in wheel_names
    assert "kernelgym/validate.py" in wheel_names


def test_wheel_has_no_caches(wheel_names):
    assert not [n for n in wheel_names if "__pycache__" in n or n.endswith(".pyc")]
