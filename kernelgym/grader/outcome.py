"""A grade's one typed outcome, decided here and nowhere else.

Every grade carries exactly one `outcome` from `OUTCOMES`; the rollout adds the episode-level ones
(`POLICY_ERROR`). Reports, comparisons and datasets read this field; none of them guesses an outcome from
message text. An infrastructure fault (the sandbox could not start, the grading process died before any
candidate code ran) is its own outcome, never the kernel's failure: its score is 0 like a failed compile,
but a trainer or a report can drop or retry it (`is_infra_fault`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

INFRA_FAULT = "infra_fault"
TIMEOUT = "timeout"
COMPILE_ERROR = "compile_error"
PROVENANCE_REFUSED = "provenance_refused"
INCORRECT = "incorrect"
CORRECT_NOT_TIMED = "correct_not_timed"
SPEEDUP_WITHHELD = "speedup_withheld"
SLOWER = "slower"
NO_GAIN = "no_gain"
FASTER = "faster"
POLICY_ERROR = "policy_error"

OUTCOMES: dict[str, str] = {
    INFRA_FAULT: "the machine, not the kernel, failed: the sandbox could not start, or the grading process or the "
                 "observed run died before any candidate code ran in it (CUDA out of memory beside other envs, say) "
                 "(score 0, but not the kernel's fault: retry or drop it)",
    TIMEOUT: "the candidate's process ran past the grading time limit and was killed",
    COMPILE_ERROR: "the editable files, the build, the import or a kernel's first compile failed",
    PROVENANCE_REFUSED: "a provenance defence refused the kernel (static check, dynamic check or outside observer): "
                        "something other than the candidate's own kernels computed the output",
    INCORRECT: "the kernel ran but an output was outside tolerance, a config raised, or a timed run's output was "
               "wrong",
    CORRECT_NOT_TIMED: "correct; nothing was timed (the CPU interpreter, or measure=False): the score is 120",
    SPEEDUP_WITHHELD: "correct, but the measured speedup was refused (above the hardware's peak, or not supported "
                      "by the observer's device times): the score is 120",
    SLOWER: "correct and timed; slower than the baseline beyond the noise band (mean of the per-config bands' "
            "upper ends below 1)",
    NO_GAIN: "correct and timed; within the noise band of the baseline",
    FASTER: "correct and timed; faster than the baseline beyond the noise band (mean of the per-config bands' "
            "lower ends above 1)",
    POLICY_ERROR: "episode level: the policy raised (or reported an error) before submitting; the kernel as it "
                  "stood was graded, and that grade's outcome is kept beside this one",
}
"""Every outcome and what it means (docs/GRADING.md lists them from here)."""

FAULT_INFRA, FAULT_TIMEOUT = "infra", "timeout"


def decide(*, compiled: bool | None, correct: bool | None, performance: bool | None,
           configs: Sequence[Mapping[str, Any]], checks: Mapping[str, str], fault: str | None) -> str:
    """The outcome of one grading, from the gates' typed results.

    Args:
        compiled, correct, performance: the three stages' ``passed`` (None: did not run, or not measured).
        configs: the grade's per-config rows; timed ones hold ``noise_band`` ([low, high] per-round speedups).
        checks: the grade's ``checks``; only the summary keys ``static_check``, ``dynamic_check`` and ``observer``
            decide (``failed...``: a provenance refusal).
        fault: what the grader knows went wrong outside the kernel's gates: `FAULT_INFRA`, `FAULT_TIMEOUT` or None.

    Returns:
        One key of `OUTCOMES` (never `POLICY_ERROR`, which the rollout sets).
    """
    if fault == FAULT_INFRA:
        return INFRA_FAULT
    if fault == FAULT_TIMEOUT:
        return TIMEOUT
    if not compiled:
        return COMPILE_ERROR
    if not correct:
        refused = any(str(checks.get(name, "")).startswith("failed")
                      for name in ("static_check", "dynamic_check", "observer"))
        return PROVENANCE_REFUSED if refused else INCORRECT
    if performance is None:
        return CORRECT_NOT_TIMED
    if not performance:
        return SPEEDUP_WITHHELD
    bands = [c["noise_band"] for c in configs if c.get("noise_band")]
    if not bands:
        return NO_GAIN
    low = sum(b[0] for b in bands) / len(bands)
    high = sum(b[1] for b in bands) / len(bands)
    return FASTER if low > 1.0 else SLOWER if high < 1.0 else NO_GAIN


def is_infra_fault(outcome: str | None) -> bool:
    """Whether an outcome is the machine's fault, not the kernel's (a trainer drops or retries these)."""
    return outcome == INFRA_FAULT
