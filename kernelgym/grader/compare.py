"""Output comparison against the reference: floating-point outputs under a task's per-dtype tolerance, integer
and bool outputs exactly, or as sets along the last dimension where the task declares it (top-k indices with ties)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

#: Relative L2 error above which an output fails even inside the elementwise tolerance: blocks constant or
#: near-zero outputs that clear a loose absolute tolerance when the true values are small.
MAX_REL_L2 = 0.05
#: Outputs of at least this many elements give their comparison's GPU memory back at once (`_compare_where_held`).
LARGE_OUTPUT_ELEMENTS = 1 << 24


@dataclass(frozen=True)
class PreparedReference:
    """A reference output made ready for comparing, ahead of time (the grader does it while the agent works):
    `values` in fp32, the elementwise `bound` atol + rtol * |ref| (fp32, same shape; None where it is computed at
    each comparison from `atol` and `rtol` instead), the L2 `norm` of its finite values and, where some values are
    NaN/Inf, the mask of the `finite` ones (None where all are)."""

    values: torch.Tensor
    bound: torch.Tensor | None
    norm: float
    finite: torch.Tensor | None = None
    rule: str = "tolerance"
    """tolerance, exact or set (see `compare_output`); for exact and set, `values` keeps the reference's dtype (set:
    sorted along the last dimension) and `bound` is None."""
    atol: float | None = None
    rtol: float | None = None
    """The tolerance the bound is made of (``tolerance`` only); where `bound` is None and these are too, the reference
    cannot be compared (an error, never an exact comparison by default)."""

    def numel(self) -> int:
        return self.values.numel()


def prepare_reference(ref: torch.Tensor, tol, rule: str = "tolerance", keep_bound: bool = True) -> PreparedReference:
    """`ref` (any shape) made ready for `rule`: for ``tolerance`` (any float dtype) its bound under the `Tolerance`
    `tol`; for ``exact`` the values as they are; for ``set`` sorted along the last dimension. See
    `PreparedReference`. `keep_bound` False: the bound is computed at each comparison instead of held (on a GPU,
    where it takes one fused pass and holding it would double the memory each env's references take beside the
    candidates' processes: 0.8 GB per input set of triton-matmul).

    Raises:
        ValueError: `rule` is none of tolerance, exact, set; or `ref` is not a tensor.
    """
    if not isinstance(ref, torch.Tensor):
        raise ValueError(f"the reference returned a {type(ref).__name__}, not a tensor")
    if rule in ("exact", "set"):
        v = ref.detach()
        return PreparedReference(v.sort(dim=-1).values if rule == "set" and v.dim() else v, None, 0.0, None, rule)
    if rule != "tolerance":
        raise ValueError(f"unknown comparison rule {rule!r}; expected tolerance, exact or set")
    r = ref.detach().float()
    bound = _bound(r, tol.atol, tol.rtol) if keep_bound else None
    finite = torch.isfinite(r)
    if bool(finite.all()):
        return PreparedReference(r, bound, float(r.norm()), None, rule, tol.atol, tol.rtol)
    return PreparedReference(r, bound, float(r[finite].norm()), finite, rule, tol.atol, tol.rtol)


def _bound(r: torch.Tensor, atol: float | None, rtol: float | None) -> torch.Tensor:
    """The elementwise bound atol + rtol * |r| (fp32, the shape of `r`).

    Raises:
        ValueError: the tolerance is not known (a reference prepared without its bound or its tolerance)."""
    if atol is None or rtol is None:
        raise ValueError("the reference holds neither its elementwise bound nor its tolerance")
    return r.abs().mul_(rtol).add_(atol)


def compare_outputs(out: Any, ref: torch.Tensor | PreparedReference, config: dict, tol) -> tuple[bool, str, float | None]:
    """`compare_output` of a single output whose dtype is the config's ``dtype``, under the tolerance `tol`."""
    return compare_output(out, ref, str(config.get("dtype", "")), "tolerance", tol)


def compare_output(out: Any, ref: torch.Tensor | PreparedReference, dtype: str, rule: str,
                   tol=None) -> tuple[bool, str, float | None]:
    """Check one candidate output against the reference.

    Args:
        out: what the candidate produced (loaded from its process; anything).
        ref: the reference output, or prepared ahead (`prepare_reference` with the same `rule` and `tol`, which
            halves the work done here).
        dtype: the torch dtype name the output must have (``float16``, ``int32``, ...).
        rule: ``tolerance`` (elementwise |out - ref| <= atol + rtol * |ref|, compared in fp32, plus a relative-L2
            guard), ``exact`` (equal values), or ``set`` (equal after sorting along the last dimension).
        tol: the task's `Tolerance` for `dtype` (``tolerance`` only).

    Returns:
        (ok, message, max_abs_err). NaN or Inf where the reference is finite never passes. Any error while
        comparing (an exotic tensor from the candidate) is a failed comparison, never an exception.
    """
    try:
        prepared = ref if isinstance(ref, PreparedReference) else prepare_reference(ref, tol, rule)
        return _compare_where_held(out, prepared, dtype, tol)
    except Exception as e:  # noqa: BLE001
        return False, f"output could not be compared: {type(e).__name__}: {str(e)[:200]}", None


def _compare_where_held(out: Any, ref: PreparedReference, dtype: str, tol) -> tuple[bool, str, float | None]:
    """`_compare` where `ref` is held; where that is the GPU and it fails (out of memory beside the candidates'
    processes, a CUDA error): the machine's limit, not the kernel's fault, so compared again on the CPU, where an
    exotic output fails as it would have. Raises what the CPU comparison raises."""
    try:
        result = _compare(out, ref, dtype, tol)
        if ref.values.device.type != "cpu" and ref.values.numel() >= LARGE_OUTPUT_ELEMENTS:
            # The output's copy and the fp32 temporaries (about 4x the output's bytes) go back to the driver, for the
            # candidates' processes on this card: this process's allocator would keep them reserved until the next
            # grading's references.
            torch.cuda.empty_cache()
        return result
    except Exception:  # noqa: BLE001
        if ref.values.device.type == "cpu":
            raise
        torch.cuda.empty_cache()
        return _compare(out, on_cpu(ref), dtype, tol)


def on_cpu(ref: PreparedReference) -> PreparedReference:
    """`ref` with its tensors on the CPU."""
    def cpu(t):
        return None if t is None else t.cpu()
    return PreparedReference(cpu(ref.values), cpu(ref.bound), ref.norm, cpu(ref.finite), ref.rule, ref.atol, ref.rtol)


def _compare(out: Any, ref: PreparedReference, dtype: str, tol) -> tuple[bool, str, float | None]:
    if not isinstance(out, torch.Tensor):
        return False, f"output is a {type(out).__name__}, not a tensor", None
    if out.layout != torch.strided or out.device.type != "cpu" or out.is_quantized or out.is_complex():
        return False, f"output must be a dense real tensor (got layout {out.layout}, device {out.device})", None
    if tuple(out.shape) != tuple(ref.values.shape):
        return False, f"output shape {tuple(out.shape)} != expected {tuple(ref.values.shape)}", None
    want = getattr(torch, dtype, None)
    if isinstance(want, torch.dtype) and out.dtype != want:
        return False, f"output dtype {out.dtype} != expected {want}", None
    # The candidate's output was loaded on the CPU; it is compared where the reference is held (the GPU, where the
    # grader computes references there: GraderConfig.references_on_gpu).
    out = out.detach().to(ref.values.device)
    if ref.rule != "tolerance":
        o = out.sort(dim=-1).values if ref.rule == "set" and out.dim() else out
        differ = o.to(ref.values.dtype) != ref.values
        if bool(differ.any()):
            idx = int(differ.flatten().nonzero()[0])
            what = "as sets along the last dimension" if ref.rule == "set" else "exactly"
            return (False, f"{int(differ.sum())}/{differ.numel()} elements differ ({what}); first at flat index {idx}: "
                    f"got {o.flatten()[idx].item()}, expected {ref.values.flatten()[idx].item()}", None)
        return True, "equal" + (" as sets" if ref.rule == "set" else ""), 0.0
    o, r = out.detach(), ref.values
    if o.element_size() == 1:  # fp8: PyTorch does no arithmetic on it; compared in fp32 (exact for fp8 values)
        o = o.float()
    # Fast path, few passes over the data (a 4096 x 8192 output is 32M elements): the error and the elementwise
    # test `err <= bound`, which is False for NaN, so NaN and Inf outputs fail it too.
    err = torch.sub(o, r).abs_()  # promoted to fp32
    # Relative L2 over the reference's finite values: a NaN there must not switch the check off.
    diff_norm = float(err.norm() if ref.finite is None else err[ref.finite].norm())
    rel = diff_norm / ref.norm if ref.norm > 0 else diff_norm
    within = err <= (ref.bound if ref.bound is not None else _bound(r, ref.atol, ref.rtol))
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


def trivial_output_passes(ref: PreparedReference, dtype: str, tol=None) -> str | None:
    """Whether an all-zero or a constant output (the reference's mean, rounded to `dtype`) passes against `ref`:
    then the task's tolerance or its reference cannot tell a kernel that computes nothing from one that works.
    Returns a message saying which passes, or None where neither does. A one-element output is its own mean: only
    the all-zero output is tried there (a decode step's single token or scale is a real output). Where the GPU
    holds `ref` and fails the check (out of memory beside the candidates' processes, a CUDA error), it is made again
    on the CPU: raised, it would fail the task's reference (a TaskSpecError out of the env's step)."""
    try:
        return _trivial_output_passes(ref, dtype, tol)
    except Exception:  # noqa: BLE001
        if ref.values.device.type == "cpu":
            raise
        torch.cuda.empty_cache()
        return _trivial_output_passes(on_cpu(ref), dtype, tol)


def _trivial_output_passes(ref: PreparedReference, dtype: str, tol=None) -> str | None:
    want = getattr(torch, dtype, torch.float32)
    mean = ref.values.double().mean() if ref.values.numel() else torch.tensor(0.0)
    fakes = [("an all-zero output", 0.0)]
    if ref.values.numel() > 1:
        fakes.append(("a constant output (the reference's mean)", float(mean)))
    for what, value in fakes:
        fake = torch.full(tuple(ref.values.shape), value, dtype=torch.float64).to(want)  # on the CPU, as loaded
        if ref.values.numel() and _compare(fake, ref, dtype, tol)[0]:
            return f"{what} passes the comparison (rule {ref.rule}): the reference is constant or the tolerance too loose"
    return None
