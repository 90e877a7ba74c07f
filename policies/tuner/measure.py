"""What the tuner's measure command (``python bench.py --check``, docs/BENCH.md) said, parsed from its output.

The score is bench's ``speedup_mean`` (the mean over the seen configs of the per-config speedup against the
original kernel: what the grade pays), its ``kind`` "measured" (GPU, the grader's timing) or "model" (CPU
interpreter: bytes counted, time estimated, nothing timed); where no ``BENCH`` line is printed (a custom command
without bench), the check's ``time_ms`` (kind "check", score 1 / time).

A *screening* measure (`parse_screen`) is bench alone with fewer runs (the tuner's ``screen_cmd``): no check.py, so
it counts as correct where bench timed every config it was asked for and none of its checked timed runs differed
from the original's output (bench compares one drawn run per block with the original's, at twice the tolerance).
It ranks candidates; only a full measure (``check_cmd``: check.py on every seen config, then bench) can make a
variant the one submitted.
"""
from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field

CHECK_LINE = re.compile(r"CHECK correct=(\d+)/(\d+) time_ms=(\S+)")
BENCH_LINE = re.compile(r"BENCH kind=(\w+) speedup_mean=(\S+) speedup_geomean=(\S+) band=(\S+)\.\.(\S+) "
                        r"bytes_ratio=(\S+) configs=(\d+)")
CONFIG_LINE = re.compile(r"^config (\d+) (\{.*?\}): .*?speedup ([0-9.]+)x", re.M)
SIZE_CLASS_LINE = re.compile(r"^SIZE_CLASS (\d+) (\d+)$", re.M)
ENTRY_LINE = re.compile(r"^ENTRY (\S+)$", re.M)


@dataclass
class Measure:
    """What one run of the measure command said.

    ``score``: higher is better (the mean speedup, or 1 / time for kind "check"); nan where there is none.
    ``band``: bench's noise band of the mean (lo, hi), a speedup. ``per_config``: config index -> (config, speedup).
    """
    correct: bool
    kind: str  # "measured", "model" or "check"
    score: float
    bytes_ratio: float = math.nan
    band: tuple[float, float] = (math.nan, math.nan)
    per_config: dict[int, tuple[dict, float]] = field(default_factory=dict)
    screen: bool = False
    """A screening measure (bench alone, fewer runs): it ranks candidates, it never qualifies one for submission."""
    seconds: float = math.nan
    """Wall time of the measure command, as the tuner saw it (its budget is spent in these)."""
    refused: list[str] = field(default_factory=list)
    """The grader's static check refused the variant (``file:line: what [rule]`` each): it was never measured."""

    def describe(self) -> str:
        """One phrase: correct or not, and the measure with its kind said (a model is labelled a model)."""
        if self.refused:
            return f"refused by the grader's static check, not measured: {'; '.join(self.refused)}"
        if not self.correct:
            return ("WRONG or failed (not kept)" if not self.screen else
                    "failed its screening (a config not timed, or a checked run differed; not kept)")
        if self.screen:
            return (f"screening measure (fewer runs, no check.py) {self.score:.4f}x "
                    f"(band {self.band[0]:.3f}..{self.band[1]:.3f})")
        if self.kind == "model":
            return (f"correct; MODEL estimate (bench.py's roofline model, not a measurement): speedup "
                    f"{self.score:.4f}x, bytes moved x{self.bytes_ratio:.3f} of the original")
        if self.kind == "measured":
            return f"correct; measured speedup {self.score:.4f}x (band {self.band[0]:.3f}..{self.band[1]:.3f})"
        return f"correct; check time {1 / self.score if self.score > 0 else math.nan:.4f} ms" \
            if not math.isnan(self.score) else "correct; no time (nothing to rank by)"


@dataclass
class Tried:
    """One variant the search measured: its label, source, the launch values it set and its measure."""
    label: str
    source: str
    values: dict[str, int]
    measure: Measure
    structure: str = "original"


def parse_check(output: str) -> tuple[bool, float]:
    """(all configs correct, total time in ms or nan) from the check command's output."""
    found = CHECK_LINE.findall(output)
    if not found:
        return False, math.nan
    n_ok, total, t = int(found[-1][0]), int(found[-1][1]), float(found[-1][2])  # the last summary line
    return n_ok == total and total > 0, t


def parse_measure(output: str) -> Measure:
    """The measure command's output as a `Measure` (bench's line where there is one, else the check's time)."""
    ok, t = parse_check(output)
    found = BENCH_LINE.findall(output)
    if found:
        kind, mean, _, lo, hi, ratio, n = found[-1]
        per = {int(i): (_literal(c), float(s)) for i, c, s in CONFIG_LINE.findall(output)}
        score = float(mean)
        usable = ok and int(n) > 0 and not math.isnan(score)
        return Measure(usable, kind, score if usable else math.nan, float(ratio), (float(lo), float(hi)), per)
    return Measure(ok, "check", 1.0 / t if ok and t > 0 else math.nan)


def parse_screen(output: str, n_configs: int | None) -> Measure:
    """A screening measure (bench alone) as a `Measure` with ``screen`` set: correct where bench printed its summary
    for `n_configs` configs (None: any number above 0) and no config line says WRONG or error."""
    found = BENCH_LINE.findall(output)
    if not found:
        return Measure(False, "measured", math.nan, screen=True)
    kind, mean, _, lo, hi, ratio, n = found[-1]
    per = {int(i): (_literal(c), float(s)) for i, c, s in CONFIG_LINE.findall(output)}
    failed = re.search(r"^config \d+ .*?: (WRONG|error)", output, re.M) is not None
    score = float(mean)
    usable = (not failed and int(n) > 0 and (n_configs is None or int(n) == n_configs) and not math.isnan(score))
    return Measure(usable, kind, score if usable else math.nan, float(ratio), (float(lo), float(hi)), per, screen=True)


def parse_size_classes(output: str) -> tuple[str | None, dict[int, int]]:
    """(the entry point's function name, config index -> size class) from `SIZE_CLASS_CMD`'s output."""
    entry = ENTRY_LINE.search(output)
    return (entry.group(1) if entry else None), {int(i): int(c) for i, c in SIZE_CLASS_LINE.findall(output)}


#: Prints the entry point's function and, per seen config, the size class of its inputs as the kernel file's
#: `_tuner_size_class` computes it (launch_params.SIZE_CLASS_FN): the inputs built by the task's own input builder.
SIZE_CLASS_CMD = (
    "timeout 120 python -c \"import json, importlib\n"
    "c = json.load(open('configs.json'))\n"
    "print('ENTRY', c['entry_point'].split(':')[1])\n"
    "mod, fn = c['input_builder'].split(':')\n"
    "build = getattr(importlib.import_module(mod[:-3] if mod.endswith('.py') else mod), fn)\n"
    "for i, cfg in enumerate(c['configs']):\n"
    "    xs = build(cfg, 0)\n"
    "    xs = xs if isinstance(xs, (tuple, list)) else [xs]\n"
    "    n = max([x.numel() for x in xs if hasattr(x, 'numel')] or [0])\n"
    "    print('SIZE_CLASS', i, 1 << max(n - 1, 0).bit_length())\n"
    "    del xs\n\"")


def _literal(text: str) -> dict:
    try:
        value = ast.literal_eval(text)
        return value if isinstance(value, dict) else {}
    except (ValueError, SyntaxError):
        return {}
