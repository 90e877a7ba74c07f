"""Hardware profiles: ``hardware/<id>.yaml`` (numbers) plus ``hardware/<id>.md`` (a reference document
that goes into the prompt). Code reads the data; there are no ``arch ==`` branches.

Detection: the CPU interpreter when no GPU is visible; otherwise the first profile whose `match`
substrings occur in ``torch.cuda.get_device_name()`` (or, on ROCm, in ``gcnArchName``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kernelgym.errors import HardwareProfileError

DEFAULT_HARDWARE_ROOT = Path(__file__).resolve().parent / "profiles"


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

    @model_validator(mode="after")
    def _flush_covers_cache(self) -> "HardwareProfile":
        if self.flush_bytes < 2 * self.llc_bytes:
            raise ValueError(f"flush_bytes ({self.flush_bytes}) must be >= 2 x llc_bytes ({self.llc_bytes})")
        return self

    def reference_doc(self, root: Path = DEFAULT_HARDWARE_ROOT) -> str:
        """The profile's reference document (Markdown), or '' when missing."""
        path = root / self.doc
        return path.read_text() if path.is_file() else ""


def load_profile(path: str | Path) -> HardwareProfile:
    """Load and validate one ``hardware/<id>.yaml``.

    Raises:
        HardwareProfileError: the file is missing, not YAML, or a field is wrong (named in the message).
    """
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
        return HardwareProfile.model_validate(raw)
    except FileNotFoundError:
        raise HardwareProfileError(f"{path}: not found") from None
    except (yaml.YAMLError, ValidationError) as e:
        raise HardwareProfileError(f"{path}: {e}") from None


def all_profiles(root: str | Path = DEFAULT_HARDWARE_ROOT) -> dict[str, HardwareProfile]:
    """Every profile under `root`, keyed by id."""
    return {p.stem: load_profile(p) for p in sorted(Path(root).glob("*.yaml"))}


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


def detect_profile(requested: str | None = None, root: str | Path = DEFAULT_HARDWARE_ROOT) -> HardwareProfile:
    """The profile of the running device, or the `requested` one after checking it matches.

    Args:
        requested: a profile id (e.g. ``"h200"``, ``"cpu-interpreter"``) or None to detect.

    Raises:
        HardwareProfileError: unknown id; a GPU profile requested with no GPU or a different GPU
            visible; or a GPU no profile matches.
    """
    profiles = all_profiles(root)
    names = _device_strings()
    if requested is not None:
        if requested not in profiles:
            raise HardwareProfileError(f"unknown hardware profile {requested!r}; known: {', '.join(sorted(profiles))}")
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
                               f"hardware/<id>.yaml with a `match` entry for it (see hardware/h200.yaml)")
