"""The arena score (AgentKernelArena, arXiv:2605.16819, section on scoring).

+20 for compiling, +100 for correct output, +100 x speedup on top. A failed gate stops the
rest, so a wrong kernel (at most 20) can never beat a correct one (at least 120).
"""
from __future__ import annotations

COMPILE_POINTS = 20.0
CORRECT_POINTS = 100.0
SPEEDUP_POINTS = 100.0


def arena_score(compiled: bool, correct: bool, speedup: float | None) -> float:
    """Score of one graded kernel.

    Args:
        compiled: the compile gate passed.
        correct: the correctness gate passed (ignored unless `compiled`).
        speedup: baseline time / candidate time (aggregate over configs), or None when not measured
            (CPU interpreter, or a measurement rejected as invalid): then no speedup term.

    Returns:
        0, 20, 120, or 120 + 100 x speedup.

    Raises:
        ValueError: `speedup` is negative, NaN or infinite.
    """
    if not compiled:
        return 0.0
    if not correct:
        return COMPILE_POINTS
    score = COMPILE_POINTS + CORRECT_POINTS
    if speedup is not None:
        if not (speedup >= 0.0 and speedup != float("inf")):
            raise ValueError(f"speedup must be a finite number >= 0, got {speedup!r}")
        score += SPEEDUP_POINTS * speedup
    return score
