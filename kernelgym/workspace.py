"""Per-episode workspaces: a fresh copy of a task's public files, and path checks for file actions."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from kernelgym.backends import backend_path
from kernelgym.hardware import HardwareProfile
from kernelgym.spaces import ActionError
from kernelgym.task import Task, read_task_file

TOOLS = Path(__file__).resolve().parent / "workspace_tools"
PROTOCOL = Path(__file__).resolve().parent / "grader" / "protocol.py"


def create_workspace(task: Task, directory: Path, hardware: HardwareProfile) -> Path:
    """Make `directory` a fresh workspace: the task's public files, `check.py` (a self-check the agent
    may run), `profile.py` (what the profile action runs), their loader `kernelgym_entry.py` with copies of the grader's protocol
    and the task language's backend in `.kernelgym/`, and `configs.json` (the seen configs, outputs and tolerances
    for this hardware). Returns its path."""
    directory.mkdir(parents=True, exist_ok=False)
    for rel in task.public_files():
        # Read, not copied with shutil: a link in the task folder must not bring a host file's contents along.
        (directory / rel).parent.mkdir(parents=True, exist_ok=True)
        (directory / rel).write_bytes(read_task_file(task.root, rel))
        shutil.copymode(task.root / rel, directory / rel)
    for tool in ("check.py", "profile.py", "kernelgym_entry.py"):
        shutil.copy2(TOOLS / tool, directory / tool)
    # The grader's protocol, comparison and the language's backend: the tools load and check the kernel as it does.
    (directory / ".kernelgym").mkdir()
    shutil.copy2(PROTOCOL, directory / ".kernelgym" / "protocol.py")
    shutil.copy2(PROTOCOL.parent / "compare.py", directory / ".kernelgym" / "compare.py")
    shutil.copy2(backend_path(task.spec.language), directory / ".kernelgym" / "backend.py")
    spec = task.spec
    configs = task.configs_for(hardware.interpreter)
    (directory / "configs.json").write_text(json.dumps({
        "language": spec.language, "entry_point": spec.entry_point, "reference": spec.reference,
        "input_builder": spec.input_builder, "editable_files": spec.editable_files, "configs": configs,
        "outputs": [{"name": o.name, "dtype": o.dtype, "arg": o.arg,
                     "rule": {o.dtype_for(c): o.rule_for(c) for c in configs}} for o in spec.outputs],
        "tolerance": {k: v.model_dump() for k, v in spec.tolerance.items()},
        "interpreter": hardware.interpreter}, indent=1))
    return directory


def resolve_in_workspace(workspace: Path, path: str) -> Path:
    """The real path of `path` (relative to, or absolute inside, `workspace`), symlinks resolved.

    Raises:
        ActionError: the path, after resolving symlinks, lies outside the workspace.
    """
    ws = os.path.realpath(workspace)
    real = os.path.realpath(os.path.join(ws, path))
    if real != ws and not real.startswith(ws + os.sep):
        # Where it resolves is not said: through links such as /proc/self/fd/N it would name the env process's
        # own files on the host.
        raise ActionError(f"path {path!r} resolves outside the workspace (symlinks followed); "
                          f"file actions may only touch files inside it")
    return Path(real)
