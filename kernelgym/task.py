"""Task specification: `task.yaml` loaded and validated into a `Task`.

A task directory (``tasks/<language>/<name>/``) holds ``task.yaml``, the baseline
kernel (the editable files) and the PyTorch reference with its input builder. Data
belongs to the task, not to code: seen configs, the space unseen configs are drawn
from, and tolerances live in ``task.yaml`` so the grader can run any kernel on any
config without editing scripts.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kernelgym.config_space import ConfigSpace, DimRange, expand, violations  # noqa: F401 - DimRange re-exported
from kernelgym.errors import TaskSpecError
from kernelgym.resources import builtin_folder

#: The built-in tasks: the repository's top-level tasks/ folder, shipped in the package as kernelgym.tasks.
DEFAULT_TASKS_ROOT = builtin_folder("tasks")

#: The largest task file read or copied (a downloaded task folder is not trusted to be small).
MAX_TASK_FILE_BYTES = 256 << 20

TaskKind = Literal["triton2triton", "hip2hip", "torch2hip", "torch2triton", "cuda2cuda", "torch2cuda"]
#: Output dtypes compared exactly (or by a declared rule) rather than under a tolerance.
EXACT_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64")


class Tolerance(BaseModel):
    """Elementwise tolerance: |out - ref| <= atol + rtol * |ref| (as torch.allclose)."""

    model_config = ConfigDict(extra="forbid")
    atol: float = Field(ge=0)
    rtol: float = Field(ge=0)


class OutputSpec(BaseModel):
    """One output of the entry point.

    Returned outputs come back from the entry point in the declared order (one tensor, or a tuple of them); an
    output with `arg` set is written in place into that positional argument (e.g. a KV-cache write). The
    reference returns every output, in the declared order, in place ones included.
    """

    model_config = ConfigDict(extra="forbid")
    name: str = Field(default="out", pattern=r"^[A-Za-z_]\w*$")
    dtype: str = "config"
    """The dtype the candidate's output must have: a torch dtype name (``float32``, ``int32``, ``bool``, ...), or
    ``config`` for the config's ``dtype`` field."""
    arg: int | None = Field(default=None, ge=0)
    """Index of the positional argument written in place; None: returned."""
    compare: Literal["tolerance", "exact", "set"] | None = None
    """``tolerance``: elementwise |out - ref| <= atol + rtol * |ref| (the task's `tolerance` for the output's dtype);
    ``exact``: equal values; ``set``: equal as sets along the last dimension (e.g. top-k indices where ties may
    come in any order). Default: tolerance for floating-point dtypes, exact for integer and bool ones."""

    def dtype_for(self, config: dict[str, Any]) -> str:
        """The dtype name this output must have on `config`."""
        return str(config.get("dtype")) if self.dtype == "config" else self.dtype

    def rule_for(self, config: dict[str, Any]) -> str:
        """How this output is compared on `config`: tolerance, exact or set."""
        if self.compare is not None:
            return self.compare
        return "exact" if self.dtype_for(config) in EXACT_DTYPES else "tolerance"


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
    language: str
    """The backend that builds and loads the candidate: a module ``kernelgym/backends/<language>.py``."""
    kind: TaskKind
    difficulty: Literal["easy", "medium", "hard"] | None = None
    description: str
    guidance: str = ""
    editable_files: list[str] = Field(min_length=1)
    entry_point: str = Field(pattern=r"^[\w./-]+:\w+$")
    """``file:function`` the grader calls with the inputs: a Python file (Triton) or the source the backend builds
    (``binding.cpp:gelu`` for CUDA: a function the PYBIND11 module built from the sources exports)."""
    target_functions: list[str] = Field(default_factory=list)
    reference: str = Field(pattern=r"^[\w./-]+\.py:\w+$")
    input_builder: str = Field(pattern=r"^[\w./-]+\.py:\w+$")
    """``file.py:function(config, seed, device) -> tuple`` of kernel arguments."""
    outputs: list[OutputSpec] = Field(default_factory=lambda: [OutputSpec()], min_length=1)
    """What the entry point produces (default: one returned tensor of the config's dtype)."""
    reference_device: Literal["cpu", "cuda"] = "cpu"
    """Where the reference runs: ``cuda`` runs it on the GPU, in a trusted process of its own (never the
    candidate's); on a machine without a GPU it runs on the CPU."""
    seen_configs: list[dict[str, Any]] = Field(min_length=1)
    interpreter_configs: list[dict[str, Any]] = Field(min_length=1)
    """Tiny configs used instead of `seen_configs` on the CPU Triton interpreter."""
    config_space: ConfigSpace
    tolerance: dict[str, Tolerance] = Field(default_factory=dict)
    """Per output dtype (``float16``, ...): the elementwise tolerance of outputs compared under one."""
    roofline: Roofline | None = None
    version: int = Field(default=0, ge=0)
    unsupported_hardware: dict[str, str] = Field(default_factory=dict)
    """Hardware that cannot grade this task although its language runs there: a hardware profile id, vendor
    (``cpu`` for the interpreter) or arch, mapped to the reason (e.g. the interpreter rounds to fp8 wrongly).
    Validate, the env and the test suite skip the task there, giving the reason."""

    allowed_torch_ops: list[str] = Field(default_factory=list)
    """PyTorch operators (aten overload packet names: ``arange``, ``index_select``) the entry point may run outside
    its kernels, beyond the allocation, views, copies and fills every task allows (`protocol.ALLOWED_TORCH_OPS`):
    the harness's dynamic check fails a config whose call runs any other (docs/TASKS.md)."""

    @field_validator("allowed_torch_ops")
    @classmethod
    def _op_names(cls, ops: list[str]) -> list[str]:
        import re
        for op in ops:
            if not re.fullmatch(r"[a-z_][a-z0-9_]*", op):
                raise ValueError(f"allowed_torch_ops: {op!r} is not an aten operator name (an overload packet, as "
                                 f"`arange` or `index_select`, without `aten.` or an overload)")
        return ops

    @field_validator("editable_files")
    @classmethod
    def _relative(cls, files: list[str]) -> list[str]:
        for f in files:
            if Path(f).is_absolute() or ".." in Path(f).parts or not Path(f).parts:
                raise ValueError(f"editable file {f!r} must be a relative path inside the task directory")
        # One spelling per file (`./kernel.py`, `a//b.py`): the file walk names them so, and a second spelling would
        # copy the file twice.
        return [PurePosixPath(f).as_posix() for f in files]

    @model_validator(mode="after")
    def _consistent(self) -> "TaskSpec":
        entry_file = PurePosixPath(self.entry_point.split(":")[0]).as_posix()
        self.entry_point = f"{entry_file}:{self.entry_point.split(':')[1]}"  # spelled as editable_files are
        if entry_file not in self.editable_files:
            raise ValueError(f"entry_point file {entry_file!r} is not in editable_files {self.editable_files}")
        from kernelgym.backends import available_languages  # here: backends import errors, not task
        if self.language not in available_languages():
            raise ValueError(f"language {self.language!r} has no backend; backends exist for "
                             f"{', '.join(available_languages())} (add one with "
                             f"kernelgym.backends.register_backend('<language>.py') or $KERNELGYM_BACKENDS_PATH, "
                             f"before the tasks are discovered: docs/TASKS.md, 'Language backends')")
        for where, configs in (("seen_configs", self.seen_configs), ("interpreter_configs", self.interpreter_configs)):
            for cfg in configs:
                broken = violations(self.config_space, cfg)
                if broken:
                    raise ValueError(f"{where}: config {cfg} is outside config_space: {'; '.join(broken)}")
        if self.roofline is not None:
            from kernelgym.roofline import parse
            known = {*self.config_space.dims, *self.config_space.derived, "itemsize"}
            for field_name in ("bytes", "flops"):
                unknown = parse(getattr(self.roofline, field_name))[1] - known
                if unknown:
                    raise ValueError(f"roofline.{field_name} names {sorted(unknown)}, which are neither dims, derived "
                                     f"dims nor itemsize (known: {sorted(known)})")
        names = [o.name for o in self.outputs]
        if len(set(names)) != len(names):
            raise ValueError(f"outputs have duplicate names {names}")
        for cfg in self.seen_configs + self.interpreter_configs:
            for o in self.outputs:
                if o.rule_for(cfg) == "tolerance" and o.dtype_for(cfg) not in self.tolerance:
                    raise ValueError(f"config {cfg}: output {o.name!r} has dtype {o.dtype_for(cfg)!r} with no entry "
                                     f"in tolerance (tolerance has {sorted(self.tolerance)})")
        return self

    def tolerance_for(self, output: OutputSpec, config: dict[str, Any]) -> Tolerance | None:
        """The tolerance `output` is compared under on `config`, or None where it is compared exactly or as a set."""
        return self.tolerance[output.dtype_for(config)] if output.rule_for(config) == "tolerance" else None


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
        """Files copied into a fresh workspace: everything in the task dir but task.yaml and private/ (links that
        leave the task dir, and anything but regular files, left out: `load_task` refuses them)."""
        out = []
        for p in sorted(self.root.rglob("*")):
            rel = p.relative_to(self.root)
            if (rel.parts[0] not in ("task.yaml", "private", "__pycache__") and inside(self.root, p)
                    and _is_regular(p)):
                out.append(rel)
        return out

    def unsupported_reason(self, hardware: Any) -> str | None:
        """Why `hardware` (a `HardwareProfile`) cannot grade this task, from `unsupported_hardware` (matched on the
        profile's id, then vendor, then arch); None when it can, as far as the task says."""
        for key in (hardware.id, hardware.vendor, hardware.arch):
            if key in self.spec.unsupported_hardware:
                return f"{self.name} is not graded on {hardware.id} ({key}): {self.spec.unsupported_hardware[key]}"
        return None

    def require_supported(self, hardware: Any) -> None:
        """Raise `TaskSpecError` with the reason when the task declares `hardware` unsupported."""
        reason = self.unsupported_reason(hardware)
        if reason:
            raise TaskSpecError(f"{reason}. Pick another task or hardware profile.")

    def configs_for(self, interpreter: bool) -> list[dict[str, Any]]:
        """The seen configs graded on this hardware (tiny ones on the CPU interpreter), with their derived dims."""
        configs = self.spec.interpreter_configs if interpreter else self.spec.seen_configs
        return [expand(self.spec.config_space, c) for c in configs]

    def __repr__(self) -> str:
        return f"Task({self.env_id!r}, root={str(self.root)!r})"


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, links resolved, is `root` or lies under it."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top + os.sep)


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def task_tree_problems(root: Path, skip: tuple[str, ...] = ()) -> list[str]:
    """What a task folder must not hold, one line each: a symlink resolving outside it (its target would be copied
    into the agent's workspace), and anything but regular files and folders (a FIFO blocks its reader, a device never
    ends). Folders named in `skip` are not walked."""
    problems = []
    for here, dirs, names in os.walk(root):
        # __pycache__: Python writes its cache there (a temporary file, then a rename) while another process walks
        # the folder; the files it holds are never copied (`Task.public_files` leaves them out).
        dirs[:] = sorted(d for d in dirs if d not in skip and d != "__pycache__")
        for name in sorted(dirs + names):
            path = Path(here, name)
            rel = path.relative_to(root)
            if not os.path.lexists(path):
                continue  # gone since the folder was listed: nothing to copy, nothing to refuse
            if path.is_symlink() and not inside(root, path):
                problems.append(f"{rel}: a symlink to {os.readlink(path)!r}, which is outside the task folder")
            elif name in names and not _is_regular(path):
                problems.append(f"{rel}: not a regular file (a FIFO, socket, device or dangling link)")
    return problems


def read_task_file(root: Path, rel: str | Path, max_bytes: int = MAX_TASK_FILE_BYTES) -> bytes:
    """The bytes of the task file `root/rel`: a regular file (a link to one inside `root` is read as its target) of
    at most `max_bytes`.

    Raises:
        TaskSpecError: the file resolves outside `root`, is not a regular file, is too large or unreadable.
    """
    path = Path(root) / rel
    if not inside(root, path):
        raise TaskSpecError(f"{path}: a symlink that resolves outside the task folder {root}; refused")
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise TaskSpecError(f"{path}: cannot open ({e.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TaskSpecError(f"{path}: not a regular file; a task folder holds regular files only")
        if st.st_size > max_bytes:
            raise TaskSpecError(f"{path}: {st.st_size} bytes, more than the {max_bytes} a task file may hold")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise TaskSpecError(f"{path}: more than the {max_bytes} bytes a task file may hold")
    return data


def spec_error(path: Path, error: ValidationError) -> TaskSpecError:
    """A `TaskSpecError` for the task file at `path` with one line per problem pydantic found, each naming the file
    and the field (``{path}: field `a.b`: message``)."""
    lines = []
    for err in error.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
        lines.append(f"{path}: field `{loc}`: {err['msg']}")
    return TaskSpecError("\n".join(lines))


def load_task(task_dir: str | Path) -> Task:
    """Load and validate ``task_dir/task.yaml``.

    Raises:
        TaskSpecError: the file is missing, is not YAML, a field is missing or wrong, or a file it
            names does not exist; or the directory holds a symlink leaving it or a special file
            (`task_tree_problems`). The message names the file and the field.
    """
    root = Path(task_dir).resolve()
    path = root / "task.yaml"
    if not path.is_file():
        raise TaskSpecError(f"{path}: not found; a task directory must hold task.yaml")
    problems = task_tree_problems(root)
    if problems:
        raise TaskSpecError("\n".join(f"{root}: {p}" for p in problems))
    try:
        raw = yaml.safe_load(read_task_file(root, "task.yaml"))
    except yaml.YAMLError as e:
        raise TaskSpecError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise TaskSpecError(f"{path}: expected a mapping of fields, found {type(raw).__name__}")
    try:
        spec = TaskSpec.model_validate(raw)
    except ValidationError as e:
        raise spec_error(path, e) from None
    for field, ref in (("entry_point", spec.entry_point), ("reference", spec.reference),
                       ("input_builder", spec.input_builder)):
        f = ref.split(":")[0]
        if not (root / f).is_file():
            raise TaskSpecError(f"{path}: field `{field}`: file {f!r} not found in {root}")
    for f in spec.editable_files:
        if not (root / f).is_file():
            raise TaskSpecError(f"{path}: field `editable_files`: file {f!r} not found in {root}")
    return Task(spec, root)
