"""Task specification: `task.yaml` loaded and validated into a `Task`.

A task directory (``tasks/<language>/<name>/``) holds ``task.yaml``, the baseline
kernel (the editable files) and the PyTorch reference with its input builder. Data
belongs to the task, not to code: seen configs, the space unseen configs are drawn
from, and tolerances live in ``task.yaml`` so the grader can run any kernel on any
config without editing scripts.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kernelgym.config_space import ConfigSpace, DimRange  # noqa: F401 - DimRange re-exported
from kernelgym.errors import TaskSpecError

#: The built-in tasks, shipped inside the package.
DEFAULT_TASKS_ROOT = Path(__file__).resolve().parent / "tasks"

TaskKind = Literal["triton2triton", "hip2hip", "torch2hip", "torch2triton"]


class Tolerance(BaseModel):
    """Elementwise tolerance: |out - ref| <= atol + rtol * |ref| (as torch.allclose)."""

    model_config = ConfigDict(extra="forbid")
    atol: float = Field(ge=0)
    rtol: float = Field(ge=0)


class Roofline(BaseModel):
    """Work per config, as Python expressions over the config's fields and `itemsize` (bytes per element)."""

    model_config = ConfigDict(extra="forbid")
    bytes: str
    """Fewest bytes the kernel must move through device memory."""
    flops: str
    """Floating-point operations the kernel must do."""


class TaskSpec(BaseModel):
    """The fields of ``task.yaml``; see tasks/triton/rmsnorm/task.yaml for a commented example."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    language: Literal["triton", "hip", "cuda"]
    kind: TaskKind
    description: str
    guidance: str = ""
    editable_files: list[str] = Field(min_length=1)
    entry_point: str = Field(pattern=r"^[\w./-]+\.py:\w+$")
    """``file.py:function`` the grader calls with the inputs."""
    target_functions: list[str] = Field(default_factory=list)
    reference: str = Field(pattern=r"^[\w./-]+\.py:\w+$")
    input_builder: str = Field(pattern=r"^[\w./-]+\.py:\w+$")
    """``file.py:function(config, seed, device) -> tuple`` of kernel arguments."""
    seen_configs: list[dict[str, Any]] = Field(min_length=1)
    interpreter_configs: list[dict[str, Any]] = Field(min_length=1)
    """Tiny configs used instead of `seen_configs` on the CPU Triton interpreter."""
    config_space: ConfigSpace
    tolerance: dict[str, Tolerance] = Field(min_length=1)
    roofline: Roofline | None = None
    version: int = Field(default=0, ge=0)

    @field_validator("editable_files")
    @classmethod
    def _relative(cls, files: list[str]) -> list[str]:
        for f in files:
            if Path(f).is_absolute() or ".." in Path(f).parts:
                raise ValueError(f"editable file {f!r} must be a relative path inside the task directory")
        return files

    @model_validator(mode="after")
    def _consistent(self) -> "TaskSpec":
        entry_file = self.entry_point.split(":")[0]
        if entry_file not in self.editable_files:
            raise ValueError(f"entry_point file {entry_file!r} is not in editable_files {self.editable_files}")
        for cfg in self.seen_configs + self.interpreter_configs:
            if cfg.get("dtype") not in self.tolerance:
                raise ValueError(f"config {cfg} has dtype {cfg.get('dtype')!r} with no entry in tolerance "
                                 f"(tolerance has {sorted(self.tolerance)})")
        return self


class Task:
    """A loaded, validated task: its spec plus the directory it lives in.

    Attributes:
        spec: the validated `TaskSpec`.
        root: the task directory (pristine; never handed to the agent).
        name: ``<language>-<id>``, e.g. ``triton-rmsnorm``.
        env_id: the Gymnasium id, ``KernelArena/<language>-<id>-v<version>``.
    """

    def __init__(self, spec: TaskSpec, root: Path):
        self.spec = spec
        self.root = root
        self.name = f"{spec.language}-{spec.id}"
        self.env_id = f"KernelArena/{self.name}-v{spec.version}"

    def public_files(self) -> list[Path]:
        """Files copied into a fresh workspace: everything in the task dir but task.yaml and private/."""
        out = []
        for p in sorted(self.root.rglob("*")):
            rel = p.relative_to(self.root)
            if p.is_file() and rel.parts[0] not in ("task.yaml", "private", "__pycache__"):
                out.append(rel)
        return out

    def configs_for(self, interpreter: bool) -> list[dict[str, Any]]:
        """The seen configs graded on this hardware: tiny ones on the CPU interpreter."""
        return self.spec.interpreter_configs if interpreter else self.spec.seen_configs

    def __repr__(self) -> str:
        return f"Task({self.env_id!r}, root={str(self.root)!r})"


def load_task(task_dir: str | Path) -> Task:
    """Load and validate ``task_dir/task.yaml``.

    Raises:
        TaskSpecError: the file is missing, is not YAML, a field is missing or wrong, or a file it
            names does not exist. The message names the file and the field.
    """
    root = Path(task_dir).resolve()
    path = root / "task.yaml"
    if not path.is_file():
        raise TaskSpecError(f"{path}: not found; a task directory must hold task.yaml")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise TaskSpecError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise TaskSpecError(f"{path}: expected a mapping of fields, found {type(raw).__name__}")
    try:
        spec = TaskSpec.model_validate(raw)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
            lines.append(f"{path}: field `{loc}`: {err['msg']}")
        raise TaskSpecError("\n".join(lines)) from None
    for field, ref in (("entry_point", spec.entry_point), ("reference", spec.reference),
                       ("input_builder", spec.input_builder)):
        f = ref.split(":")[0]
        if not (root / f).is_file():
            raise TaskSpecError(f"{path}: field `{field}`: file {f!r} not found in {root}")
    for f in spec.editable_files:
        if not (root / f).is_file():
            raise TaskSpecError(f"{path}: field `editable_files`: file {f!r} not found in {root}")
    return Task(spec, root)
