"""`tuner`: a real baseline policy that tunes a kernel's launch parameters.

It reads the kernel file, finds module-level integer constants named in `params` (e.g. ``BLOCK_SIZE``,
``NUM_WARPS``), and tunes them one at a time (coordinate descent): for each value it rewrites the file,
runs the check command in the workspace, and keeps the value if the kernel stays correct and gets faster.
It then writes the best correct variant and submits.

On the CPU interpreter the check reports no time (interpreter timings mean nothing), so no variant can be
shown faster: the tuner still checks every variant's correctness, and keeps the original values.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Generator

CHECK_LINE = re.compile(r"CHECK correct=(\d+)/(\d+) time_ms=(\S+)")

#: Nothing beyond kernelgym itself (see kernelgym.policy: REQUIRES).
REQUIRES: list[str] = []


@dataclass
class TunerConfig:
    file: str = "kernel.py"
    """The kernel file whose constants are tuned."""
    params: dict[str, list[int]] = field(default_factory=lambda: {"BLOCK_SIZE": [256, 512, 1024, 2048, 4096],
                                                                 "NUM_WARPS": [1, 2, 4, 8, 16]})
    """Constant name -> values to try. Constants absent from the file are skipped."""
    check_cmd: str = "python check.py"
    """Shell command that prints `CHECK correct=<n>/<total> time_ms=<float|nan>`."""
    min_gain: float = 0.01
    """A variant must be this much faster (fraction) to replace the best so far (guards against noise)."""


def parse_check(output: str) -> tuple[bool, float]:
    """(all configs correct, total time in ms or nan) from the check command's output."""
    found = CHECK_LINE.findall(output)
    if not found:
        return False, math.nan
    n_ok, total, t = int(found[-1][0]), int(found[-1][1]), float(found[-1][2])  # the last summary line
    return n_ok == total and total > 0, t


def set_constant(source: str, name: str, value: int) -> str:
    return re.sub(rf"^({name}\s*=\s*)\d+", rf"\g<1>{value}", source, count=1, flags=re.M)


class TunerPolicy:
    """Coordinate-descent tuner over launch constants; see the module docstring."""

    def __init__(self, config: TunerConfig):
        self.config = config
        self.log: list[dict[str, Any]] = []

    def reset(self, observation: dict[str, str], info: dict[str, Any]) -> None:
        self._plan = self._run()
        self._started = False
        self.log = []

    def act(self, observation: dict[str, str], info: dict[str, Any]) -> dict[str, Any]:
        try:
            if not self._started:
                self._started = True
                return next(self._plan)
            return self._plan.send(observation)
        except StopIteration:
            return {"kind": "submit"}

    def close(self) -> None:
        """Nothing to release."""

    def _run(self) -> Generator[dict[str, Any], dict[str, str], None]:
        cfg = self.config
        obs = yield {"kind": "read_file", "path": cfg.file}
        source = obs["output"]
        values = {}
        for name in cfg.params:
            m = re.search(rf"^{name}\s*=\s*(\d+)", source, flags=re.M)
            if m:
                values[name] = int(m.group(1))
        obs = yield {"kind": "shell", "cmd": cfg.check_cmd}
        best_ok, best_t = parse_check(obs["output"])
        best = dict(values)
        self.log.append({"values": dict(best), "correct": best_ok, "time_ms": best_t})
        for name in values:
            for v in cfg.params[name]:
                if v == best[name]:
                    continue
                trial = {**best, name: v}
                src = source
                for k, val in trial.items():
                    src = set_constant(src, k, val)
                yield {"kind": "write_file", "path": cfg.file, "content": src}
                obs = yield {"kind": "shell", "cmd": cfg.check_cmd}
                ok, t = parse_check(obs["output"])
                self.log.append({"values": trial, "correct": ok, "time_ms": t})
                faster = ok and not math.isnan(t) and (not best_ok or math.isnan(best_t) or t < best_t * (1 - cfg.min_gain))
                if faster:
                    best, best_ok, best_t = trial, ok, t
        final = source
        for k, val in best.items():
            final = set_constant(final, k, val)
        yield {"kind": "write_file", "path": cfg.file, "content": final}
        yield {"kind": "submit"}
