"""Config spaces: the named integer dimensions a task's configs have, and where unseen configs may be drawn from."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class DimRange(BaseModel):
    """An integer dimension's range for unseen configs, inclusive."""

    model_config = ConfigDict(extra="forbid")
    min: int = Field(ge=1)
    max: int = Field(ge=1)
    multiple_of: int = Field(default=1, ge=1)
    """Values must be divisible by this (1: any value)."""


class ConfigSpace(BaseModel):
    """Where unseen configs may be drawn from."""

    model_config = ConfigDict(extra="forbid")
    dims: dict[str, DimRange]
    """Each integer config field and its range."""
    dtypes: list[str] = Field(min_length=1)
    max_bytes: int = Field(default=8 << 30, ge=1)
    """Cap on the bytes one config's inputs and outputs may take (see `roofline.bytes`)."""
    production_shapes: list[dict[str, Any]] = Field(default_factory=list)
    """Named shapes from widely used models, e.g. {rows: 1, hidden: 4096, model: llama-3-8b}."""
