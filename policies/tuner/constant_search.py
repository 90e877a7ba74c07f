"""The tuner's search over named module constants (config ``params``) and over a rewrite's per-size table.

Both are generators of env actions driven by a `TunerPolicy` (its `_trial`, `_can_try`, `_better` and `_stop`):
they yield actions, receive observations and return the `Tried` variants they measured.
"""
from __future__ import annotations

import itertools
import math
import re

from kernelgym.policies.tuner.measure import Measure, Tried


def constants(source: str, names) -> dict[str, int]:
    """The module-level `NAME = <int>` values of `names` in `source` (names absent are left out)."""
    found = {}
    for name in names:
        m = re.search(rf"^{name}\s*=\s*(\d+)", source, flags=re.M)
        if m:
            found[name] = int(m.group(1))
    return found


def set_constant(source: str, name: str, value: int) -> str:
    return re.sub(rf"^({name}\s*=\s*)\d+", rf"\g<1>{value}", source, count=1, flags=re.M)


def set_table(source: str, name: str, table: dict[int, int]) -> str:
    text = "{" + ", ".join(f"{k}: {v}" for k, v in sorted(table.items())) + "}"
    return re.sub(rf"^({name}\s*=\s*)\{{[^\n]*\}}", lambda m: m.group(1) + text, source, count=1, flags=re.M)


def next_pow2(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def tune_constants(policy, name: str, source: str, m0: Measure, model: bool):
    """`params`: the named module constants over their given values, jointly where the grid has at most
    `max_joint` points, else one at a time from the best so far. Returns [Tried]."""
    cfg = policy.config
    current = constants(source, cfg.params)
    names = [n for n in current if not (model and n in cfg.launch_only)]
    if not names:
        return []
    if math.prod(len(cfg.params[n]) for n in names) <= cfg.max_joint:
        trials = [dict(zip(names, vals)) for vals in itertools.product(*(cfg.params[n] for n in names))]
        plan = [t for t in trials if any(t[n] != current[n] for n in names)]
        joint = True
    else:
        plan, joint = [(n, v) for n in names for v in cfg.params[n]], False
    found, chosen, best_m = [], dict(current), m0
    for item in plan:
        t = item if joint else {**chosen, item[0]: item[1]}
        if not joint and t[item[0]] == chosen[item[0]]:
            continue
        if not policy._can_try():
            policy._stop("the constant search")
            break
        src = source
        for k, v in t.items():
            src = set_constant(src, k, v)
        label = f"{name} with " + ", ".join(f"{k}={v}" for k, v in t.items())
        m = yield from policy._trial(src, label)
        found.append(Tried(label, src, t, m, name))
        if policy._better(m, best_m):
            best_m, chosen = m, t
    return found


def tune_table(policy, name: str, source: str, table: dict, m0: Measure, values: dict | None = None):
    """A rewrite's per-size table: per size (next power of two of the config's `table['field']`), the value
    with the best per-config speedup, from one measure per value on every size. `table['default']`, where given,
    is the value an empty table means: `m0` (the measure of `source`, whose table is empty) stands for it, so it is
    not measured again. `values`: the launch values `source` already carries (kept in each variant's). Returns
    [Tried]."""
    values = dict(values or {})
    keys = {i: next_pow2(c.get(table["field"], 1)) for i, (c, _) in m0.per_config.items()}
    results, found = {}, []
    default = table.get("default")
    if default is not None and m0.correct and m0.per_config:
        results[default] = m0
    for v in table["values"]:
        if v == default:
            continue
        if not policy._can_try():
            policy._stop(f"the per-size table search ({table['name']})")
            return found
        src = set_table(source, table["name"], {k: v for k in set(keys.values())})
        label = f"{name} with {table['name']} = {v} for every size"
        m = yield from policy._trial(src, label)
        found.append(Tried(label, src, {**values, table["name"]: v}, m, name))
        if m.correct and m.per_config:
            results[v] = m
    if len(results) < 2 or not policy._can_try():
        return found
    choice = {}
    for k in sorted(set(keys.values())):
        idx = [i for i, key in keys.items() if key == k]
        choice[k] = max(results, key=lambda v: sum(results[v].per_config.get(i, ({}, 0.0))[1] for i in idx))
    if len(set(choice.values())) > 1:
        src = set_table(source, table["name"], choice)
        label = f"{name} with {table['name']} = {choice} (best per size)"
        m = yield from policy._trial(src, label)
        found.append(Tried(label, src, {**values, table["name"]: str(choice)}, m, name))
    return found
