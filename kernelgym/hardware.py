"""Hardware profiles: ``hardware/<id>.yaml`` (numbers) plus ``hardware/<id>.md`` (a reference document
that goes into the prompt). Code reads the data; there are no ``arch ==`` branches.

Profiles are looked for in the built-in folder (the repository's ``hardware/``), then in each folder of
``KERNELGYM_HARDWARE_PATH`` (os.pathsep-separated), then in the folders given as ``hardware_dir``. A user
profile may not reuse an id: that is an error naming both files. A broken profile is skipped with a warning.

Detection: the CPU interpreter when no GPU is visible; otherwise the first profile whose `match`
substrings occur in ``torch.cuda.get_device_name()`` (or, on ROCm, in ``gcnArchName``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal, NamedTuple

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from kernelgym.discovery import Dirs, as_dirs, env_dirs, warn_once
from kernelgym.errors import HardwareProfileError
from kernelgym.resources import builtin_folder

#: The built-in profiles: the repository's top-level hardware/ folder, shipped in the package as
#: kernelgym.hardware_profiles.
DEFAULT_HARDWARE_ROOT = builtin_folder("hardware")
#: Environment variable listing the user's hardware-profile folders, separated by os.pathsep.
HARDWARE_PATH_ENV = "KERNELGYM_HARDWARE_PATH"
#: Vendors of the languages that have no backend module: the reference arena's HIP task types (hip2hip, torch2hip),
#: graded by their folders' own commands on AMD. Every other language's vendors are its backend's ``VENDORS``.
NO_BACKEND_VENDORS: dict[str, frozenset[str]] = {"hip": frozenset({"amd"})}


class HardwareProfile(BaseModel):
    """One GPU (or the CPU interpreter). Field units are in their names."""

    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    vendor: Literal["nvidia", "amd", "cpu"]
    arch: str
    match: list[str] = Field(default_factory=list)
    """Case-insensitive substrings of the device name (or ROCm gcnArchName) that select this profile."""
    interpreter: bool = False
    """True for the Triton CPU interpreter: no meaningful timing."""
    warp_size: int = Field(ge=1)
    compute_units: int = Field(ge=1)
    peak_bandwidth_gbps: float = Field(ge=0)
    peak_tflops: dict[str, float]
    l2_bytes: int = Field(ge=0)
    llc_bytes: int = Field(ge=0)
    flush_bytes: int = Field(ge=0)
    """Bytes read between timed runs to evict the caches (>= 2 x llc_bytes)."""
    shared_memory_per_unit_bytes: int = Field(ge=0)
    triton_launch_options: list[str]
    doc: str
    sources: list[str] = Field(default_factory=list)
    notes: str = ""
    _source: Path | None = PrivateAttr(default=None)
    """The yaml file this profile was loaded from (its `doc` is looked up beside it)."""

    @model_validator(mode="after")
    def _flush_covers_cache(self) -> "HardwareProfile":
        if self.flush_bytes < 2 * self.llc_bytes:
            raise ValueError(f"flush_bytes ({self.flush_bytes}) must be >= 2 x llc_bytes ({self.llc_bytes})")
        return self

    @property
    def source(self) -> Path | None:
        """The yaml file this profile was loaded from (None for a profile built in code)."""
        return self._source

    def reference_doc(self, root: Path | None = None) -> str:
        """The profile's reference document (Markdown), read from `root` (default: beside its yaml), or ''."""
        folder = root if root is not None else (self._source.parent if self._source else DEFAULT_HARDWARE_ROOT)
        path = Path(folder) / self.doc
        return path.read_text() if path.is_file() else ""

    def supports(self, language: str) -> bool:
        """True when tasks written in `language` (``triton``, ``cuda``, ``hip``) can be graded on this device."""
        return self.vendor in language_vendors(language)


def language_vendors(language: str) -> frozenset[str]:
    """The hardware vendors (``nvidia``, ``amd``, ``cpu`` for the interpreter) whose devices run `language`: its
    backend module's ``VENDORS``, else `NO_BACKEND_VENDORS`, else none."""
    from kernelgym.backends import available_languages, get_backend

    if language in available_languages():
        return frozenset(get_backend(language).VENDORS)
    return NO_BACKEND_VENDORS.get(language, frozenset())


def load_profile(path: str | Path) -> HardwareProfile:
    """Load and validate one ``hardware/<id>.yaml``.

    Raises:
        HardwareProfileError: the file is missing, not YAML, or a field is wrong (named in the message).
    """
    path = Path(path).resolve()
    try:
        raw = yaml.safe_load(path.read_text())
        profile = HardwareProfile.model_validate(raw)
    except FileNotFoundError:
        raise HardwareProfileError(f"{path}: not found") from None
    except (yaml.YAMLError, ValidationError, OSError, ValueError) as e:
        raise HardwareProfileError(f"{path}: {e}") from None
    if profile.id != path.stem:
        raise HardwareProfileError(f"{path}: field `id` is {profile.id!r} but the file is named {path.name}; "
                                   f"name it {profile.id}.yaml (the id and the file name must agree)")
    profile._source = path
    return profile


def hardware_search_path(hardware_dir: Dirs = None) -> list[Path]:
    """Where profiles are looked for: the built-in folder, ``$KERNELGYM_HARDWARE_PATH``, then `hardware_dir`."""
    return [DEFAULT_HARDWARE_ROOT, *env_dirs(HARDWARE_PATH_ENV), *as_dirs(hardware_dir)]


class ProfileDiscovery(NamedTuple):
    """What `discover_profiles` found: the good profiles by id, and (file, message) for each that failed."""

    profiles: dict[str, HardwareProfile]
    problems: list[tuple[Path, str]]


def discover_profiles(roots: Dirs = None) -> ProfileDiscovery:
    """Every profile (``*.yaml``) in `roots` (None: `hardware_search_path()`), and every file that failed.

    A profile whose id an earlier folder already has is a problem naming both files, never a silent override.
    """
    profiles: dict[str, HardwareProfile] = {}
    problems: list[tuple[Path, str]] = []
    done: set[Path] = set()
    for root in (hardware_search_path() if roots is None else as_dirs(roots)):
        root = root.expanduser().resolve()
        if not root.is_dir():
            problems.append((root, f"{root}: a folder on the hardware search path is not a directory "
                                   f"(check ${HARDWARE_PATH_ENV})"))
            continue
        for path in sorted(root.glob("*.yaml")):
            if path in done:
                continue
            done.add(path)
            try:
                prof = load_profile(path)
            except HardwareProfileError as e:
                problems.append((path, str(e)))
                continue
            if prof.id in profiles:
                problems.append((path, f"{path}: hardware profile id {prof.id!r} is already taken by "
                                       f"{profiles[prof.id].source}; give one of them another id"))
                continue
            profiles[prof.id] = prof
    return ProfileDiscovery(profiles, problems)


def all_profiles(root: Dirs = None) -> dict[str, HardwareProfile]:
    """Every profile that loads from `root` (None: the search path), keyed by id; each failure warns once."""
    profiles, problems = discover_profiles(root)
    for _, message in problems:
        warn_once(f"hardware profile skipped: {message}")
    return profiles


def _device_strings() -> list[str] | None:
    """Names the running GPU answers to, or None when no GPU is visible (or torch is absent)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    names = [torch.cuda.get_device_name(0)]
    if getattr(torch.version, "hip", None):
        names.append(getattr(props, "gcnArchName", ""))
    return names


def detect_profile(requested: str | None = None, root: Dirs = None) -> HardwareProfile:
    """The profile of the running device, or the `requested` one after checking it matches.

    Args:
        requested: a profile id (e.g. ``"h200"``, ``"cpu-interpreter"``) or None to detect.
        root: folders holding the profiles (None: the built-in folder and $KERNELGYM_HARDWARE_PATH).

    Raises:
        HardwareProfileError: unknown id; a GPU profile requested with no GPU or a different GPU
            visible; or a GPU no profile matches.
    """
    profiles = all_profiles(root)
    names = _device_strings()
    if requested is not None:
        # A file of that name that failed (broken, or reusing a taken id) is the answer, not "unknown".
        failed = [m for path, m in discover_profiles(root).problems if path.stem == requested]
        if failed:
            raise HardwareProfileError(failed[0])
        if requested not in profiles:
            raise HardwareProfileError(f"unknown hardware profile {requested!r}; known: {', '.join(sorted(profiles))} "
                                       f"(add your own to a folder on ${HARDWARE_PATH_ENV})")
        prof = profiles[requested]
        if prof.interpreter:
            return prof
        if names is None:
            raise HardwareProfileError(f"hardware profile {requested!r} ({prof.name}) requested, but no GPU is "
                                       f"visible; use 'cpu-interpreter' or run on that GPU")
        if not any(m.lower() in n.lower() for m in prof.match for n in names):
            raise HardwareProfileError(f"hardware profile {requested!r} ({prof.name}) does not match the running "
                                       f"device {names}; pick the matching profile or leave it to detection")
        return prof
    if names is None:
        return next(p for p in profiles.values() if p.interpreter)
    for prof in profiles.values():
        if not prof.interpreter and any(m.lower() in n.lower() for m in prof.match for n in names):
            return prof
    raise HardwareProfileError(f"no hardware profile matches the running device {names}; add "
                               f"<id>.yaml with a `match` entry for it to a folder on ${HARDWARE_PATH_ENV} "
                               f"(see {DEFAULT_HARDWARE_ROOT / 'h200.yaml'})")
