"""The public generator of unseen configs (the generated values stay private: see store.py).

Six categories (AgentKernelArena, arXiv:2605.16819): edge cases, scale-up, scale-down, alignment stress, extreme aspect
ratio, production shapes; 8 configs per task. The first dimension of the task's config space is the batch
(rows) and the last the inner (hidden) one. Every config is checked against the task's limits and the
memory cap, replaced (with the reason logged) when it does not fit, never equal to a seen config, and
validated by running the reference on it before use.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from kernelgym.roofline import evaluate
from kernelgym.task import Task

CATEGORIES = ("edge", "scale_up", "scale_down", "alignment", "aspect", "production")
#: Categories of the 8 configs, in order: two edge cases and two alignment stresses, one of each other.
PLAN = ("edge", "edge", "scale_up", "scale_down", "alignment", "alignment", "aspect", "production")
BLOCK_SIZES = (64, 128, 256, 512, 1024, 2048, 4096)
SMALL_PRIMES = (37, 97, 131)
LARGE_PRIMES = (769, 3001, 4003, 5003)
#: On the CPU interpreter a config may have at most this many elements (it takes seconds per large call).
INTERPRETER_MAX_ELEMENTS = 1 << 17


def _elements(cfg: dict, dims: list[str]) -> int:
    return math.prod(int(cfg[d]) for d in dims)


def generate_unseen_configs(task: Task, seed: int, *, interpreter: bool = False, memory_bytes: int | None = None,
                            n: int = 8, validate: Callable[[dict], str | None] | None = None
                            ) -> tuple[list[dict[str, Any]], list[str]]:
    """Generate `n` unseen configs for `task`, deterministically for `seed`.

    Args:
        interpreter: size the configs for the CPU interpreter (at most `INTERPRETER_MAX_ELEMENTS` elements).
        memory_bytes: device memory; a config whose bytes (the task's roofline formula) exceed a quarter of
            it, or the task's `max_bytes`, is shrunk.
        validate: called on each config; returns None if the reference runs on it, else the reason (the
            config is then shrunk and tried again).

    Returns:
        (configs, log): each config carries its fields plus ``category``; the log says what was replaced and why.
    """
    space = task.spec.config_space
    dims = list(space.dims)
    batch, inner = dims[0], dims[-1]
    rng = np.random.default_rng(seed)
    seen = task.spec.seen_configs + task.spec.interpreter_configs
    used = task.configs_for(interpreter)
    seen_keys = {tuple(c.get(d) for d in dims) + (c.get("dtype"),) for c in seen}
    largest = max(used, key=lambda c: _elements(c, dims))
    smallest = min(used, key=lambda c: _elements(c, dims))
    cap_bytes = min(space.max_bytes, memory_bytes // 4 if memory_bytes else space.max_bytes)
    log: list[str] = []

    def clamp(d: str, v: int) -> int:
        r = space.dims[d]
        v = max(r.min, min(r.max, int(v)))
        return max(r.min, v - v % r.multiple_of) if r.multiple_of > 1 else v

    def propose(category: str, k: int) -> dict[str, Any]:
        base = dict(used[int(rng.integers(len(used)))])
        cfg = {d: base[d] for d in dims}
        if category == "edge":
            if k == 0:
                cfg[batch] = 1
            else:
                fits = [b for b in BLOCK_SIZES if space.dims[inner].min <= b <= space.dims[inner].max]
                cfg[inner] = int(rng.choice(fits))
        elif category == "scale_up":
            cfg = {d: largest[d] for d in dims}
            cfg[str(rng.choice(dims))] *= int(rng.integers(2, 5))
        elif category == "scale_down":
            cfg = {d: max(1, smallest[d] // int(rng.integers(2, 5))) for d in dims}
        elif category == "alignment":
            # A small prime inner size with a large prime batch, then the reverse: odd sizes on both axes.
            cfg[inner] = int(rng.choice(SMALL_PRIMES if k == 0 else LARGE_PRIMES))
            cfg[batch] = int(rng.choice((37, 131) if k == 0 else (3, 7)))
        elif category == "aspect":
            cfg = {d: 1 for d in dims}
            cfg[inner] = 65536
        elif category == "production" and space.production_shapes:
            shape = space.production_shapes[int(rng.integers(len(space.production_shapes)))]
            cfg = {d: shape[d] for d in dims}
            cfg["model"] = shape.get("model", "")
        cfg = {**cfg, **{d: clamp(d, cfg[d]) for d in dims}}
        cfg["dtype"] = str(rng.choice(space.dtypes))
        return cfg

    def bytes_of(cfg: dict) -> float:
        if task.spec.roofline:
            return evaluate(task.spec.roofline.bytes, cfg)
        return 3 * _elements(cfg, dims) * 4

    configs: list[dict[str, Any]] = []
    for k, category in enumerate(PLAN[:n]):
        cfg = propose(category, PLAN[:k].count(category))
        for _ in range(64):
            reason = None
            key = tuple(cfg.get(d) for d in dims) + (cfg.get("dtype"),)
            if key in seen_keys or any(key == tuple(c.get(d) for d in dims) + (c.get("dtype"),) for c in configs):
                log.append(f"{category} {cfg}: equals a seen or earlier config; last dimension moved by 1")
                cfg[inner] = clamp(inner, cfg[inner] + 1 if cfg[inner] < space.dims[inner].max else cfg[inner] - 1)
                continue
            if interpreter and _elements(cfg, dims) > INTERPRETER_MAX_ELEMENTS:
                reason = f"{_elements(cfg, dims)} elements, over the CPU interpreter's budget of {INTERPRETER_MAX_ELEMENTS}"
            elif bytes_of(cfg) > cap_bytes:
                reason = f"{bytes_of(cfg):.3g} bytes, over the cap of {cap_bytes:.3g}"
            elif validate is not None:
                reason = validate(cfg)
            if reason is None:
                break
            # Shrink the batch dimension first (keeps the interesting inner size), then the inner one.
            d = batch if cfg[batch] > 1 else inner
            log.append(f"{category} {cfg}: replaced ({reason}); {d} halved")
            cfg[d] = clamp(d, max(1, cfg[d] // 2))
        configs.append({**cfg, "category": category})
    return configs, log
