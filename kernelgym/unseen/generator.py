"""The public generator of unseen configs (the generated values stay private: see store.py).

Six categories (AgentKernelArena, arXiv:2605.16819): edge cases, scale-up, scale-down, alignment stress, extreme
aspect ratio, production shapes; 8 configs per task. The generator works on any config space
(kernelgym/config_space.py): the space's `batch_dim` is set to 1 in edge cases and the `inner_dim` is made
large in aspect-ratio configs; dims that allow any value get primes in alignment stress and dims with a
`multiple_of` get odd multiples of it. Every config is snapped to allowed values and repaired until it keeps
the space's constraints, moved off the seen configs, shrunk (with the reason logged) when it does not fit the
memory or interpreter budget, and validated by running the reference on it. A category that yields no valid
config after `DRAWS` draws falls back, logged, to a valid config settled from a seen one or drawn anywhere in
the space; when none exists the generator raises rather than return an invalid config.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Iterator

import numpy as np

from kernelgym.config_space import ConfigSpace, expand, violations
from kernelgym.errors import TaskSpecError
from kernelgym.roofline import evaluate, itemsize
from kernelgym.task import Task

CATEGORIES = ("edge", "scale_up", "scale_down", "alignment", "aspect", "production")
#: Categories of the 8 configs, in order: two edge cases and two alignment stresses, one of each other.
PLAN = ("edge", "edge", "scale_up", "scale_down", "alignment", "alignment", "aspect", "production")
BLOCK_SIZES = (64, 128, 256, 512, 1024, 2048, 4096)
SMALL_PRIMES = (37, 97, 131)
LARGE_PRIMES = (769, 3001, 4003, 5003)
#: The size an extreme aspect-ratio config aims its large dimension at (1 row x 65536 columns in the paper).
ASPECT_LARGE = 65536
#: On the CPU interpreter a config may move at most this many elements (roofline bytes / itemsize, or the
#: product of the drawn dims without a roofline): the interpreter takes seconds per large call.
INTERPRETER_MAX_ELEMENTS = 1 << 18
#: Draws per category before the fallback, repair/shrink steps per draw, and how many allowed values a dim
#: may walk either way to move off a taken config.
DRAWS = 8
STEPS = 64
WALK = 16
#: Configs drawn anywhere in the space by the fallback once the seen configs' neighbourhoods are exhausted.
FALLBACK_DRAWS = 64

Validate = Callable[[dict], "str | None"]


def generate_unseen_configs(task: Task, seed: int, *, interpreter: bool = False, memory_bytes: int | None = None,
                            n: int = 8, validate: Validate | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Generate `n` unseen configs for `task`, deterministically for `seed`.

    Args:
        task: the task; its config space, seen and interpreter configs and roofline are used.
        seed: the generator's seed.
        interpreter: size the configs for the CPU interpreter (see `INTERPRETER_MAX_ELEMENTS`) and start
            from the interpreter configs instead of the seen ones.
        memory_bytes: device memory; a config whose bytes (the task's roofline formula) exceed a quarter of
            it, or the space's `max_bytes`, is shrunk.
        n: how many configs (the categories follow `PLAN`, repeated past 8).
        validate: called on each config; returns None if the reference runs on it, else the reason (the
            config is then shrunk and tried again).

    Returns:
        (configs, log): each config carries its dims, derived dims, ``dtype``, ``category`` and, for
        production shapes, ``model``; the log says what was replaced and why.

    Raises:
        TaskSpecError: the space admits no valid unseen config within the budgets at all.
    """
    spec = task.spec
    return generate_for_space(spec.config_space, seed, seen=spec.seen_configs + spec.interpreter_configs,
                              base=task.configs_for(interpreter),
                              roofline_bytes=spec.roofline.bytes if spec.roofline else None,
                              interpreter=interpreter, memory_bytes=memory_bytes, n=n, validate=validate)


def generate_for_space(space: ConfigSpace, seed: int, *, seen: list[dict[str, Any]],
                       base: list[dict[str, Any]] | None = None, roofline_bytes: str | None = None,
                       interpreter: bool = False, memory_bytes: int | None = None, n: int = 8,
                       validate: Validate | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Generate `n` unseen configs from `space`, deterministically for `seed` (see `generate_unseen_configs`).

    Args:
        space: the config space.
        seed: the generator's seed.
        seen: configs the agent saw; no generated config equals one of them (dims and dtype).
        base: configs the edge, scale and alignment categories start from (default: `seen`).
        roofline_bytes: the task's roofline bytes formula, to measure a config against the byte caps.
        interpreter, memory_bytes, n, validate: as in `generate_unseen_configs`.

    Returns:
        (configs, log), as `generate_unseen_configs`.

    Raises:
        TaskSpecError: the space admits no valid unseen config within the budgets at all.
    """
    gen = _Generator(space, np.random.default_rng(seed), seen, base or seen, roofline_bytes, interpreter,
                     memory_bytes, validate)
    plan = [PLAN[i % len(PLAN)] for i in range(n)]
    configs = [gen.one(category, plan[:k].count(category)) for k, category in enumerate(plan)]
    return configs, gen.log


def interpreter_gaps(task: Task) -> list[dict[str, Any]]:
    """What of `task`'s config space unseen configs drawn for the CPU interpreter never reach (`generate_unseen_configs`
    with ``interpreter=True``), derived from the space: sizes over `INTERPRETER_MAX_ELEMENTS`, where the space's largest
    config (every dim at its highest, scaled down to `max_bytes`) is larger, and the dtypes of `dtypes` outside
    `interpreter_dtypes`. Each gap is a dict: ``{"region": "elements > 262144", "reason": ..., "space_max_elements":
    n}`` or ``{"dtype": "bfloat16", "reason": ...}``. Empty when the interpreter's configs can reach every region.
    On a GPU no region is left out (the generator draws from the whole space there)."""
    spec = task.spec
    return interpreter_gaps_for_space(spec.config_space, spec.roofline.bytes if spec.roofline else None)


def interpreter_gaps_for_space(space: ConfigSpace, roofline_bytes: str | None = None) -> list[dict[str, Any]]:
    """`interpreter_gaps` of a config space (`roofline_bytes`: the task's roofline bytes formula, which measures a
    config's elements as the generator does; None: the product of the dims)."""
    gen = _Generator(space, np.random.default_rng(0), [], [], roofline_bytes, False, None, None)
    top = {d: r.highest() for d, r in space.dims.items()}
    largest = 0.0
    for dtype in space.dtypes:
        cfg = {**top, "dtype": dtype}
        try:
            elements, size = gen._elements(cfg), gen._bytes(cfg)
        except (ValueError, ArithmeticError, KeyError):  # the highest dims break a derived dim's rule
            elements = size = float(math.prod(top.values()))
        # Past max_bytes no config is drawn on a GPU either: the bytes scale about linearly with the elements.
        largest = max(largest, elements * min(1.0, space.max_bytes / size) if size > 0 else elements)
    gaps: list[dict[str, Any]] = []
    if largest > INTERPRETER_MAX_ELEMENTS:
        gaps.append({"region": f"elements > {INTERPRETER_MAX_ELEMENTS}", "reason": "over the CPU interpreter's budget",
                     "space_max_elements": int(largest)})
    run = space.interpreter_dtypes or space.dtypes
    gaps += [{"dtype": d, "reason": "the interpreter does not run it for this task"} for d in space.dtypes
             if d not in run]
    return gaps


def _odd_prime_near(v: int, lo: int, hi: int) -> int | None:
    """The largest odd prime in [lo, v], else the smallest in [v, hi], else None."""
    def prime(p: int) -> bool:
        return p >= 3 and all(p % q for q in range(3, math.isqrt(p) + 1, 2))
    top = min(v, hi) - 1 + min(v, hi) % 2  # the largest odd number at most v
    below = range(top, max(lo, 3) - 1, -2)
    above = range(max(v, lo) | 1, hi + 1, 2)
    return next((p for p in below if prime(p)), None) or next((p for p in above if prime(p)), None)


def _divisors(w: int) -> set[int]:
    """Every divisor of `w` (a positive integer)."""
    small = [q for q in range(1, math.isqrt(w) + 1) if w % q == 0]
    return {*small, *(w // q for q in small)}


class _Generator:
    """One generation run: the space, the random stream, the configs taken so far and the log."""

    def __init__(self, space: ConfigSpace, rng: np.random.Generator, seen: list[dict], base: list[dict],
                 roofline_bytes: str | None, interpreter: bool, memory_bytes: int | None, validate: Validate | None):
        self.space, self.rng, self.roofline_bytes, self.interpreter, self.validate = \
            space, rng, roofline_bytes, interpreter, validate
        self.dims = list(space.dims)
        self.ranges = space.dims
        self.dtypes = (space.interpreter_dtypes or space.dtypes) if interpreter else space.dtypes
        self.batch, self.inner = space.batch_dim, space.inner_dim
        self.taken = {self._key(c) for c in seen}
        # Seen configs need not be allowed values of the space: the categories start from their snapped copies.
        # The working configs carry the dims and the dtype; derived dims are added when a config is returned.
        self.base = [{**{d: self.ranges[d].snap(c.get(d, self.ranges[d].lowest())) for d in self.dims},
                      "dtype": c.get("dtype") if c.get("dtype") in self.dtypes else self.dtypes[0]} for c in base]
        self.base = self.base or [{**{d: r.lowest() for d, r in self.ranges.items()}, "dtype": self.dtypes[0]}]
        self.base.sort(key=self._size_hint)
        self.smallest, self.largest = self.base[0], self.base[-1]
        self.cap_bytes = min(space.max_bytes, memory_bytes // 4 if memory_bytes else space.max_bytes)
        self.log: list[str] = []

    def _key(self, cfg: dict) -> tuple:
        return tuple(cfg.get(d) for d in self.dims) + (cfg.get("dtype"),)

    def _elements(self, cfg: dict) -> float:
        # Elements moved, from the roofline when there is one: the product of a matmul's M, N, K counts FLOPs.
        if self.roofline_bytes:
            return self._bytes(cfg) / itemsize(cfg["dtype"])
        return math.prod(cfg[d] for d in self.dims)

    def _size_hint(self, cfg: dict) -> float:
        # A seen config may break the space's constraints, so that a derived dim cannot be computed.
        try:
            return self._elements(cfg)
        except ValueError:
            return math.prod(cfg[d] for d in self.dims)

    def _bytes(self, cfg: dict) -> float:
        if self.roofline_bytes:
            return evaluate(self.roofline_bytes, expand(self.space, cfg))
        return 3 * math.prod(cfg[d] for d in self.dims) * itemsize(cfg["dtype"])

    def _pick(self, items: list | tuple) -> Any:
        return items[int(self.rng.integers(len(items)))]

    # ---- one config ------------------------------------------------------------------------------------------

    def one(self, category: str, k: int) -> dict[str, Any]:
        """The next config of `category` (`k`: how many of it came before), valid and unseen."""
        for draw in range(DRAWS):
            cfg, protected, extras = self._propose(category, k)
            cfg.setdefault("dtype", str(self._pick(self.dtypes)))
            cfg, why = self._settle(cfg, protected, category, extras)
            if cfg is not None:
                return self._finish(cfg, category, extras)
            self.log.append(f"{category}: draw {draw} dropped ({why}); drawing again")
        # The fallback: the seen configs, smallest first, then every dim at its smallest, then configs drawn
        # log-uniformly over the whole space (they find the few free configs of a nearly exhausted space).
        why = ""
        lowest = {**{d: self.ranges[d].lowest() for d in self.dims}, "dtype": self.dtypes[0]}
        for start in itertools.chain(self.base, [lowest], (self._anywhere() for _ in range(FALLBACK_DRAWS))):
            cfg, why = self._settle(dict(start), set(), category, {})
            if cfg is not None:
                self.log.append(f"{category}: no valid config after {DRAWS} draws; fell back to {cfg}, settled "
                                f"from {start}")
                return self._finish(cfg, category, {})
        raise TaskSpecError(f"config space with dims {self.dims}: no valid unseen {category} config within the "
                            f"budgets, after {DRAWS} draws and the fallback (last reason: {why}); widen the ranges, "
                            f"relax the constraints or raise max_bytes")

    def _anywhere(self) -> dict:
        """A config drawn log-uniformly over each dim's allowed range, with a random dtype."""
        cfg = {d: r.snap(math.exp(self.rng.uniform(math.log(r.lowest()), math.log(r.highest()))))
               for d, r in self.ranges.items()}
        return {**cfg, "dtype": str(self._pick(self.dtypes))}

    def _finish(self, cfg: dict, category: str, extras: dict) -> dict[str, Any]:
        self.taken.add(self._key(cfg))
        return {**expand(self.space, {d: cfg[d] for d in self.dims}), **extras, "dtype": cfg["dtype"],
                "category": category}

    def _settle(self, cfg: dict, protected: set[str], category: str, extras: dict) -> tuple[dict | None, str]:
        """`cfg` made valid, unseen and within budget, or (None, why not)."""
        cfg = {**{d: self.ranges[d].snap(cfg[d]) for d in self.dims}, "dtype": cfg["dtype"]}
        for _ in range(STEPS):
            broken = violations(self.space, cfg)
            if broken:
                fixed = self._repair(cfg, protected)
                if fixed is None:
                    return None, f"{cfg} breaks {broken[0]} and no nearby value repairs it"
                self.log.append(f"{category} {cfg}: repaired ({broken[0]}) to {fixed}")
                cfg = fixed
                continue
            if self._key(cfg) in self.taken:
                moved = self._perturb(cfg, protected)
                if moved is None:
                    return None, f"{cfg} equals a seen or earlier config and no nearby config is free"
                self.log.append(f"{category} {cfg}: equals a seen or earlier config; moved to {moved}")
                cfg = moved
                continue
            reason = self._over_budget(cfg)
            if reason is None and self.validate is not None:
                reason = self.validate({**expand(self.space, cfg), **extras})
            if reason is None:
                return cfg, ""
            shrunk = self._shrink(cfg, protected, category)
            if shrunk is None:
                return None, f"{cfg}: {reason}, and nothing is left to shrink"
            self.log.append(f"{category} {cfg}: replaced ({reason}); {shrunk[0]} halved")
            cfg = shrunk[1]
        return None, f"no valid config after {STEPS} steps"

    def _over_budget(self, cfg: dict) -> str | None:
        if self.interpreter and self._elements(cfg) > INTERPRETER_MAX_ELEMENTS:
            return (f"{self._elements(cfg):.0f} elements, over the CPU interpreter's budget of "
                    f"{INTERPRETER_MAX_ELEMENTS}")
        if self._bytes(cfg) > self.cap_bytes:
            return f"{self._bytes(cfg):.3g} bytes, over the cap of {self.cap_bytes:.3g}"
        return None

    # ---- repairs ---------------------------------------------------------------------------------------------

    def _order(self, protected: set[str], inner_first: bool = False) -> list[str]:
        """Dims to change, unprotected ones first (the category's point is in the protected ones), and of
        those the inner dim, then the batch, last (they carry the edge, alignment and aspect points)."""
        dims = [self.inner] + [d for d in self.dims if d != self.inner] if inner_first else self.dims
        last = sorted((d for d in dims if d in protected), key=lambda d: (d == self.batch) + 2 * (d == self.inner))
        return [d for d in dims if d not in protected] + last

    def _repair(self, cfg: dict, protected: set[str], frozen: str | None = None) -> dict | None:
        """`cfg` changed one dim at a time (never `frozen`), each change breaking fewer rules, until it breaks
        none; or None."""
        broken = len(violations(self.space, cfg))
        for _ in range(STEPS):
            if broken == 0:
                return cfg
            for d in (d for d in self._order(protected) if d != frozen):
                trial = next((t for t in ({**cfg, d: v} for v in self._candidates(d, cfg))
                              if len(violations(self.space, t)) < broken), None)
                if trial is not None:
                    cfg, broken = trial, len(violations(self.space, trial))
                    break
            else:
                return None
        return None

    def _candidates(self, d: str, cfg: dict) -> list[int]:
        """Allowed values for `d` to try instead of its value in `cfg`, nearest first (on a log scale): its
        neighbours, its bounds, its seen values, powers of two times it, and multiples and divisors of the
        other dims' values (what constraints such as ``hidden % heads == 0`` need)."""
        r, v = self.ranges[d], cfg[d]
        pool = {r.lowest(), r.highest(), *(c[d] for c in self.base)}
        for w in (cfg[o] for o in self.dims if o != d):
            pool |= {r.snap(v // w * w), r.snap(-(-v // w) * w), *(r.snap(q) for q in _divisors(w))}
        up = down = v
        for _ in range(16):
            up, down = r.neighbour(up, +1) or up, r.neighbour(down, -1) or down
            pool |= {up, down}
        pool |= {r.snap(v * 2.0 ** j) for j in range(-12, 13)}
        pool.discard(v)
        return sorted(pool, key=lambda c: (abs(math.log(c / v)), c))

    def _moved(self, cfg: dict, d: str, v: int, protected: set[str]) -> dict | None:
        """`cfg` with `d` set to `v`, the other dims repaired if that breaks a rule; None if they cannot be."""
        trial = {**cfg, d: v}
        return trial if not violations(self.space, trial) else self._repair(trial, protected, frozen=d)

    def _nearby(self, cfg: dict, protected: set[str]) -> Iterator[dict]:
        """Valid configs near `cfg`, nearest first: one unprotected dim walked up to `WALK` allowed values
        either way (the rest repaired if need be), then another dtype, then a protected dim walked."""
        def walk(dims: list[str]) -> Iterator[dict]:
            at = {(d, s): cfg[d] for d in dims for s in (+1, -1)}
            for _ in range(WALK):
                for (d, s), v in at.items():
                    at[d, s] = None if v is None else self.ranges[d].neighbour(v, s)
                    moved = None if at[d, s] is None else self._moved(cfg, d, at[d, s], protected)
                    if moved is not None:
                        yield moved

        order = self._order(protected, inner_first=True)
        yield from walk([d for d in order if d not in protected])
        yield from ({**cfg, "dtype": t} for t in self.dtypes if t != cfg["dtype"])
        yield from walk([d for d in order if d in protected])

    def _perturb(self, cfg: dict, protected: set[str]) -> dict | None:
        """The nearest config to `cfg` that is valid and not taken, preferring one within the budgets (moving
        up past the budget would only be shrunk back onto a taken config); None if there is none."""
        free = list(itertools.islice((c for c in self._nearby(cfg, protected) if self._key(c) not in self.taken), 8))
        return next((c for c in free if self._over_budget(c) is None), free[0] if free else None)

    def _shrink(self, cfg: dict, protected: set[str], category: str) -> tuple[str, dict] | None:
        """(dim halved, smaller valid config), or None. The batch goes first (keeps the interesting inner
        size), else the largest dim; alignment stress takes the largest first so that every dim stays
        misaligned. A halving that breaks a rule is repaired in the other dims, and kept only if the config
        still gets smaller: repairs never undo shrinking."""
        size = self._elements(cfg)
        for group in ([d for d in self.dims if d not in protected], [d for d in self.dims if d in protected]):
            can = sorted((d for d in group if self._halve(d, cfg[d], category) < cfg[d]),
                         key=lambda d: (d != self.batch or category == "alignment", -cfg[d]))
            for d in can:
                moved = self._moved(cfg, d, self._halve(d, cfg[d], category), protected)
                if moved is not None and self._elements(moved) < size:
                    return d, moved
        return None

    def _halve(self, d: str, v: int, category: str) -> int:
        half = self.ranges[d].snap(v // 2, -1)
        return self._misalign(d, half) if category == "alignment" else half

    def _misalign(self, d: str, v: int) -> int:
        """An allowed value at most `v` that is odd: a prime for a dim that allows any value, an odd multiple
        for one with `multiple_of`; `v` snapped for a dim limited to powers of two or a set."""
        r = self.ranges[d]
        if r.free:
            p = _odd_prime_near(v, r.lowest(), r.highest())
            return p if p is not None else r.snap(v)
        if r.powers_of_two or r.values is not None:
            return r.snap(v)
        q = min(v, r.highest()) // r.multiple_of
        q -= 1 - q % 2
        return q * r.multiple_of if q >= 1 and r.allows(q * r.multiple_of) else r.snap(v)

    # ---- the six categories ----------------------------------------------------------------------------------

    def _propose(self, category: str, k: int) -> tuple[dict, set[str], dict]:
        """A raw config for `category` (a dtype only for a production shape that names one), the dims that
        carry its point, and extras for the returned config (the model of a production shape)."""
        cfg = {d: v for d, v in self._pick(self.base).items() if d != "dtype"}
        if category == "edge" and k % 2 == 0:
            cfg[self.batch] = 1
            return cfg, {self.batch}, {}
        if category == "edge":
            fits = {d: [b for b in BLOCK_SIZES if self.ranges[d].allows(b)] for d in self.dims}
            dims = [d for d in self.dims if fits[d] and d != self.batch] or [d for d in self.dims if fits[d]]
            if not dims:
                cfg[self.batch] = 1
                return cfg, {self.batch}, {}
            d = self._pick(dims)
            cfg[d] = int(self._pick(fits[d]))
            return cfg, {d}, {}
        if category == "scale_up":
            cfg = {d: self.largest[d] for d in self.dims}
            grow = [d for d in self.dims if self.ranges[d].snap(2 * cfg[d]) > cfg[d]] or self.dims
            d = self._pick(grow)
            cfg[d] *= int(self.rng.integers(2, 5))
            return cfg, {d}, {}
        if category == "scale_down":
            return {d: max(1, self.smallest[d] // int(self.rng.integers(2, 5))) for d in self.dims}, set(), {}
        if category == "alignment":
            return self._alignment(cfg, k)
        if category == "aspect":
            return self._aspect()
        shapes = self.space.production_shapes
        if not shapes:
            return cfg, set(), {}
        shape = self._pick(shapes)
        cfg = {d: shape[d] for d in self.dims}
        if shape.get("dtype") in self.dtypes:
            cfg["dtype"] = shape["dtype"]
        return cfg, set(self.dims), {"model": shape.get("model", "")}

    def _alignment(self, cfg: dict, k: int) -> tuple[dict, set[str], dict]:
        # A small prime inner size with a large prime batch, then the reverse: odd sizes on both axes; other
        # dims take the odd value just under their seen one.
        moved = set()
        for d in self.dims:
            r = self.ranges[d]
            if r.powers_of_two or r.values is not None:
                continue
            if d == self.inner:
                target = self._pick(SMALL_PRIMES if k % 2 == 0 else LARGE_PRIMES) * r.multiple_of
            elif d == self.batch:
                target = self._pick((37, 131) if k % 2 == 0 else (3, 7)) * r.multiple_of
            else:
                target = cfg[d]
            cfg[d] = self._misalign(d, target)
            moved.add(d)
        return cfg, moved, {}

    def _aspect(self) -> tuple[dict, set[str], dict]:
        # Every dim at its smallest but one at its largest, up to ASPECT_LARGE: the inner dim when it has room
        # to grow far, else the dim with the most room.
        room = {d: self.ranges[d].highest() / self.ranges[d].lowest() for d in self.dims}
        large = self.inner if room[self.inner] >= 64 else max(self.dims, key=lambda d: room[d])
        cfg = {d: self.ranges[d].lowest() for d in self.dims}
        cfg[large] = self.ranges[large].snap(ASPECT_LARGE, -1)
        return cfg, {large}, {}
