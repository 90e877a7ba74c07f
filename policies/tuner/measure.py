"""What the tuner's measure command (``python bench.py --check``, docs/BENCH.md) said, parsed from its output.

The score is bench's ``speedup_mean`` (the mean over the seen configs of the per-config speedup against the
original kernel: what the grade pays), its ``kind`` "measured" (GPU, the grader's timing) or "model" (CPU
interpreter: bytes counted, time estimated, nothing timed); where no ``BENCH`` line is printed (a custom command
without bench), the check's ``time_ms`` (kind "check", score 1 / time).
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

    def describe(self) -> str:
        """One phrase: correct or not, and the measure with its kind said (a model is labelled a model)."""
        if not self.correct:
            return "WRONG or failed (not kept)"
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
