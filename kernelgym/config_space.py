"""Config spaces: the named integer dimensions a task's configs have, and where unseen configs may be drawn from.

A space names its dimensions (``dims``, each with a range and optional alignment rules), dimensions computed
from them (``derived``, e.g. ``head_dim: "hidden // heads"``), and rules a config must keep (``constraints``,
e.g. ``"top_k <= experts"``). Expressions use the safe evaluator of kernelgym/roofline.py. Everything here is
pure Python: the grader's trusted parent and the generator use it without importing torch.

Example (a task.yaml ``config_space`` block)::

    dims:
      batch: {min: 1, max: 64}
      heads: {min: 1, max: 128}
      seq_len: {min: 1, max: 32768}
      head_dim: {values: [64, 128]}
    derived: {hidden: "heads * head_dim"}
    constraints: ["batch * seq_len <= 262144"]
    batch_dim: batch
    inner_dim: seq_len
    dtypes: [float16, bfloat16]
"""
from __future__ import annotations

import bisect
import functools
import keyword
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from kernelgym.roofline import evaluate_expression, parse

#: Keys a config carries besides its dimensions, and the evaluator's own names: no dimension may use them.
RESERVED_NAMES = frozenset({"dtype", "category", "model", "itemsize", "min", "max"})


class DimRange(BaseModel):
    """An integer dimension's allowed values for unseen configs: a range, inclusive, with optional rules."""

    model_config = ConfigDict(extra="forbid")
    min: int | None = Field(default=None, ge=1)
    """Smallest value; may be left out when `values` is given (then the smallest of them)."""
    max: int | None = Field(default=None, ge=1)
    """Largest value; may be left out when `values` is given (then the largest of them)."""
    multiple_of: int = Field(default=1, ge=1)
    """Values must be divisible by this (1: any value)."""
    powers_of_two: bool = False
    """Values must be powers of two (e.g. a head_dim or a dimension a block must cover)."""
    values: list[int] | None = Field(default=None, min_length=1)
    """An explicit allowed set, e.g. [64, 128, 256]; combined with the other rules."""

    @model_validator(mode="after")
    def _consistent(self) -> "DimRange":
        if self.values is not None:
            if any(isinstance(v, bool) or v < 1 for v in self.values):
                raise ValueError(f"values {self.values} must be integers >= 1")
            self.min = min(self.values) if self.min is None else self.min
            self.max = max(self.values) if self.max is None else self.max
        if self.min is None or self.max is None:
            raise ValueError("needs `min` and `max`, or `values` (an explicit allowed set)")
        if self.min > self.max:
            raise ValueError(f"min {self.min} is greater than max {self.max}")
        if self.finite_values == []:
            raise ValueError(f"no value satisfies every rule ({self._rules()})")
        if self.finite_values is None and self._lowest_multiple() > self.max:
            raise ValueError(f"no multiple of {self.multiple_of} lies in [{self.min}, {self.max}]")
        return self

    def _rules(self) -> str:
        rules = [f"min {self.min}", f"max {self.max}"]
        rules += [f"multiple_of {self.multiple_of}"] if self.multiple_of > 1 else []
        rules += ["powers_of_two"] if self.powers_of_two else []
        rules += [f"values {self.values}"] if self.values is not None else []
        return ", ".join(rules)

    def _lowest_multiple(self) -> int:
        return -(-self.min // self.multiple_of) * self.multiple_of

    # A cached property, not a private attribute: snapping reads it millions of times in a generation, and
    # pydantic's private-attribute lookup is slow.
    @functools.cached_property
    def finite_values(self) -> list[int] | None:
        """Every allowed value, sorted, when the dim is limited to powers of two or a set; None otherwise."""
        if not self.powers_of_two and self.values is None:
            return None
        pool = self.values if self.values is not None else [1 << k for k in range(63)]
        return sorted({v for v in pool if self.min <= v <= self.max and v % self.multiple_of == 0
                       and (not self.powers_of_two or v & (v - 1) == 0)})

    @property
    def free(self) -> bool:
        """True when any integer in the range is allowed (no multiple, power or set rule)."""
        return self.multiple_of == 1 and self.finite_values is None

    def problems(self, value: Any) -> list[str]:
        """Every rule `value` breaks, as readable phrases (empty when it is allowed).

        Args:
            value: the candidate value.

        Returns:
            Phrases such as ``"100 is not a multiple of 16"``.
        """
        if isinstance(value, bool) or not isinstance(value, int):
            return [f"{value!r} is not an integer"]
        out = []
        if value < self.min:
            out.append(f"{value} is below min {self.min}")
        if value > self.max:
            out.append(f"{value} is above max {self.max}")
        if value % self.multiple_of:
            out.append(f"{value} is not a multiple of {self.multiple_of}")
        if self.powers_of_two and (value < 1 or value & (value - 1)):
            out.append(f"{value} is not a power of two")
        if self.values is not None and value not in self.values:
            out.append(f"{value} is not one of {self.values}")
        return out

    def allows(self, value: Any) -> bool:
        """True when `value` breaks none of this dimension's rules."""
        return not self.problems(value)

    def lowest(self) -> int:
        """The smallest allowed value."""
        return self.finite_values[0] if self.finite_values is not None else self._lowest_multiple()

    def highest(self) -> int:
        """The largest allowed value."""
        return self.finite_values[-1] if self.finite_values is not None else self.max - self.max % self.multiple_of

    def snap(self, value: float, direction: int = 0) -> int:
        """The allowed value nearest `value`.

        Args:
            value: any number.
            direction: -1 for the nearest at or below, +1 at or above, 0 for the nearest either way (ties go
                down); where none lies that way, the nearest allowed value.

        Returns:
            An allowed value.
        """
        finite = self.finite_values
        lo, hi = (finite[0], finite[-1]) if finite is not None else (self.lowest(), self.highest())
        if value <= lo:
            return lo
        if value >= hi:
            return hi
        if finite is not None:
            i = bisect.bisect_left(finite, value)
            below = finite[i - 1] if finite[i] != value else finite[i]
            above = finite[i]
        else:
            m = self.multiple_of
            below = int(math.floor(value / m)) * m
            above = below if below == value else below + m
        if direction:
            return below if direction < 0 else above
        return below if value - below <= above - value else above

    def neighbour(self, value: int, direction: int) -> int | None:
        """The allowed value next to `value` (strictly above for `direction` +1, below for -1), or None."""
        if direction > 0:
            v = self.snap(value + 1, +1)
            return v if v > value else None
        v = self.snap(value - 1, -1)
        return v if v < value else None


class ConfigSpace(BaseModel):
    """Where unseen configs may be drawn from."""

    model_config = ConfigDict(extra="forbid")
    dims: dict[str, DimRange] = Field(min_length=1)
    """Each integer config field and its allowed values."""
    derived: dict[str, str] = Field(default_factory=dict)
    """Dimensions computed from others, e.g. {head_dim: "hidden // heads"}; must give a positive integer."""
    constraints: list[str] = Field(default_factory=list)
    """Boolean expressions every config keeps, over dims and derived dims, e.g. "N % heads == 0"."""
    batch_dim: str | None = None
    """The dimension set to its smallest value (1) in edge cases, kept small in aspect-ratio configs and shrunk
    first when a config is over budget (default: the first dim)."""
    inner_dim: str | None = None
    """The dimension made large in aspect-ratio configs and prime in alignment ones (default: the last dim)."""
    dtypes: list[str] = Field(min_length=1)
    interpreter_dtypes: list[str] | None = None
    """The dtypes unseen configs take on the CPU interpreter (default: `dtypes`), for a task whose kernels Triton's
    interpreter computes wrongly in some dtype (bf16 `tl.dot` in Triton 3.7)."""
    max_bytes: int = Field(default=8 << 30, ge=1)
    """Cap on the bytes one config's inputs and outputs may take (see `roofline.bytes`)."""
    production_shapes: list[dict[str, Any]] = Field(default_factory=list)
    """Named shapes from widely used models, e.g. {rows: 1, hidden: 4096, model: llama-3-8b}."""

    _order: list[str] = PrivateAttr(default_factory=list)
    _reads: dict[str, set[str]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> "ConfigSpace":
        if self.interpreter_dtypes is not None and not (self.interpreter_dtypes and set(self.interpreter_dtypes)
                                                        <= set(self.dtypes)):
            raise ValueError(f"interpreter_dtypes {self.interpreter_dtypes} must be a non-empty subset of dtypes "
                             f"{self.dtypes}")
        for name in [*self.dims, *self.derived]:
            if not name.isidentifier() or keyword.iskeyword(name) or name in RESERVED_NAMES:
                raise ValueError(f"dimension name {name!r} must be a Python identifier other than a keyword and "
                                 f"{sorted(RESERVED_NAMES)}")
        both = sorted(set(self.dims) & set(self.derived))
        if both:
            raise ValueError(f"derived: {both} also in dims; a dimension is either drawn (dims) or computed "
                             f"(derived), not both")
        known = [*self.dims, *self.derived]
        for name, expr in self.derived.items():
            self._reads[name] = _names_of(f"derived `{name}`", expr, known)
        self._order = _dependency_order(self.dims, self._reads)
        for i, expr in enumerate(self.constraints):
            _names_of(f"constraints[{i}]", expr, known)
        self.batch_dim = self.batch_dim or next(iter(self.dims))
        self.inner_dim = self.inner_dim or list(self.dims)[-1]
        for field in ("batch_dim", "inner_dim"):
            if getattr(self, field) not in self.dims:
                raise ValueError(f"{field} {getattr(self, field)!r} is not in dims {list(self.dims)}"
                                 + (" (a derived dimension cannot be drawn)" if getattr(self, field) in self.derived
                                    else ""))
        for i, shape in enumerate(self.production_shapes):
            missing = [d for d in self.dims if d not in shape]
            if missing:
                raise ValueError(f"production_shapes[{i}] {shape}: missing {missing}; a shape names every dim "
                                 f"of {list(self.dims)}")
            bad = {d: shape[d] for d in self.dims if isinstance(shape[d], bool) or not isinstance(shape[d], int)}
            if bad:
                raise ValueError(f"production_shapes[{i}]: {bad} must be integers")
        return self


def _names_of(where: str, expr: str, known: list[str]) -> set[str]:
    """The names `expr` reads, checked against `known`; the ValueError names `where`."""
    try:
        _, names = parse(expr)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    unknown = sorted(names - set(known))
    if unknown:
        raise ValueError(f"{where}: expression {expr!r} names unknown dimension(s) {unknown}; known: {known}")
    return names


def _dependency_order(dims: dict[str, Any], reads: dict[str, set[str]]) -> list[str]:
    """Derived dimensions in an order that computes each after what it reads.

    Raises:
        ValueError: derived dimensions read each other in a cycle.
    """
    order: list[str] = []
    done = set(dims)
    pending = dict(reads)
    while pending:
        ready = [n for n, r in pending.items() if r <= done]
        if not ready:
            raise ValueError(f"derived: {sorted(pending)} read each other in a cycle; each must come from dims in "
                             f"the end")
        for n in ready:
            order.append(n)
            done.add(n)
            del pending[n]
    return order


def expand(space: ConfigSpace, cfg: dict[str, Any]) -> dict[str, Any]:
    """`cfg` plus its derived dimensions, computed (a stale value already in `cfg` is replaced).

    Args:
        space: the config space.
        cfg: a config naming every dimension of ``space.dims``.

    Returns:
        A new dict; a derived value that is a whole number becomes an int.

    Raises:
        ValueError: a dimension is missing, or a derived expression cannot be computed (e.g. division by zero).
    """
    out = dict(cfg)
    missing = [d for d in space.dims if d not in cfg]
    if missing:
        raise ValueError(f"config {cfg}: missing dimension(s) {missing}")
    for name in space._order:
        names = {k: v for k, v in out.items() if k in space.dims or k in space.derived}
        try:
            value = evaluate_expression(space.derived[name], names)
        except ValueError as e:
            raise ValueError(f"derived `{name}`: {e}") from None
        out[name] = int(value) if isinstance(value, float) and value.is_integer() else value
    return out


def violations(space: ConfigSpace, cfg: dict[str, Any]) -> list[str]:
    """Every rule of `space` that `cfg` breaks, as readable messages (empty when `cfg` is valid).

    Checks each dimension's range, multiple, power of two and allowed set, that each derived dimension is a
    positive integer, each constraint, and the dtype when `cfg` has one.

    Args:
        space: the config space.
        cfg: a config; derived dimensions in it are ignored and computed afresh.

    Returns:
        Messages such as ``"hidden: 100 is not a multiple of 16"`` or
        ``"constraint `top_k <= experts` is false (experts=2, top_k=8)"``.
    """
    out = [f"{d}: missing" for d in space.dims if d not in cfg]
    if out:
        return out
    for d, r in space.dims.items():
        out += [f"{d}: {p}" for p in r.problems(cfg[d])]
    if "dtype" in cfg and cfg["dtype"] not in space.dtypes:
        out.append(f"dtype: {cfg['dtype']!r} is not one of {space.dtypes}")
    if out:
        return out  # derived values and constraints mean little over values that are not allowed
    try:
        full = expand(space, cfg)
    except ValueError as e:
        return [str(e)]
    for name in space._order:
        v = full[name]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            out.append(f"{name} = {space.derived[name]} = {v!r} is not a positive integer")
    for expr in space.constraints:
        names = {k: full[k] for k in [*space.dims, *space.derived]}
        try:
            ok = evaluate_expression(expr, names)
        except ValueError as e:
            out.append(f"constraint `{expr}` cannot be evaluated: {e}")
            continue
        if not ok:
            read = ", ".join(f"{k}={names[k]}" for k in sorted(parse(expr)[1]))
            out.append(f"constraint `{expr}` is false ({read})")
    return out
