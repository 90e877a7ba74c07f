"""Output comparison against the reference, under a task's per-dtype tolerance."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

#: Relative L2 error above which an output fails even inside the elementwise tolerance: blocks constant or
#: near-zero outputs that clear a loose absolute tolerance when the true values are small.
MAX_REL_L2 = 0.05


@dataclass(frozen=True)
class PreparedReference:
    """A reference output made ready for comparing, ahead of time (the grader does it while the agent works):
    `values` in fp32, the elementwise `bound` atol + rtol * |ref| (fp32, same shape), the L2 `norm` of its finite
    values and, where some values are NaN/Inf, the mask of the `finite` ones (None where all are)."""

    values: torch.Tensor
    bound: torch.Tensor
    norm: float
    finite: torch.Tensor | None = None

    def numel(self) -> int:
        return self.values.numel()


def prepare_reference(ref: torch.Tensor, tol) -> PreparedReference:
    """`ref` (any float dtype, any shape) with its bound under the `Tolerance` `tol`; see `PreparedReference`."""
    r = ref.detach().float()
    bound, finite = r.abs().mul_(tol.rtol).add_(tol.atol), torch.isfinite(r)
    if bool(finite.all()):
        return PreparedReference(r, bound, float(r.norm()))
    return PreparedReference(r, bound, float(r[finite].norm()), finite)


def compare_outputs(out: Any, ref: torch.Tensor | PreparedReference, config: dict, tol) -> tuple[bool, str, float | None]:
    """See `_compare`; any error while comparing (an exotic tensor from the candidate) is a failed comparison.
    `ref` may be prepared ahead (`prepare_reference` with the same `tol`), which halves the work done here."""
    try:
        return _compare(out, ref if isinstance(ref, PreparedReference) else prepare_reference(ref, tol), config, tol)
    except Exception as e:  # noqa: BLE001
        return False, f"output could not be compared: {type(e).__name__}: {str(e)[:200]}", None


def _compare(out: Any, ref: PreparedReference, config: dict, tol) -> tuple[bool, str, float | None]:
    """Check a candidate output against the reference.

    Args:
        out: what the candidate returned (loaded from its process; anything).
        ref: the reference output, prepared (compared in fp32).
        config: the config; its ``dtype`` is the dtype the output must have.
        tol: the task's `Tolerance` for that dtype: |out - ref| <= atol + rtol * |ref| elementwise.

    Returns:
        (ok, message, max_abs_err). NaN or Inf where the reference is finite never passes.
    """
    if not isinstance(out, torch.Tensor):
        return False, f"output is a {type(out).__name__}, not a tensor", None
    if out.layout != torch.strided or out.device.type != "cpu" or out.is_quantized or out.is_complex():
        return False, f"output must be a dense real tensor (got layout {out.layout}, device {out.device})", None
    if tuple(out.shape) != tuple(ref.values.shape):
        return False, f"output shape {tuple(out.shape)} != expected {tuple(ref.values.shape)}", None
    want = getattr(torch, str(config.get("dtype", "")), None)
    if isinstance(want, torch.dtype) and out.dtype != want:
        return False, f"output dtype {out.dtype} != expected {want}", None
    o, r = out.detach(), ref.values
    # Fast path, few passes over the data (a 4096 x 8192 output is 32M elements): the error and the elementwise
    # test `err <= bound`, which is False for NaN, so NaN and Inf outputs fail it too.
    err = torch.sub(o, r).abs_()  # promoted to fp32
    # Relative L2 over the reference's finite values: a NaN there must not switch the check off.
    diff_norm = float(err.norm() if ref.finite is None else err[ref.finite].norm())
    rel = diff_norm / ref.norm if ref.norm > 0 else diff_norm
    within = err <= ref.bound
    if not bool(within.all()):
        finite_ref = torch.isfinite(r)
        bad = ~torch.isfinite(o) & finite_ref
        if bad.any():
            return False, f"{int(bad.sum())} non-finite values (NaN/Inf) where the reference is finite", None
        excess = ~within & finite_ref  # where the reference itself is NaN/Inf, anything goes
        if excess.any():
            max_err = float(err[finite_ref].max())
            idx = int(excess.flatten().nonzero()[0])
            return (False, f"{int(excess.sum())}/{err.numel()} elements outside atol={tol.atol}, rtol={tol.rtol}; "
                    f"max |err| {max_err:.3g}; first at flat index {idx}: got {float(o.flatten()[idx]):.5g}, "
                    f"expected {float(r.flatten()[idx]):.5g}", max_err)
    max_err = float(err.max()) if err.numel() else 0.0
    if rel > MAX_REL_L2:
        return False, f"relative L2 error {rel:.3g} > {MAX_REL_L2}", max_err
    return True, f"max |err| {max_err:.3g}", max_err
