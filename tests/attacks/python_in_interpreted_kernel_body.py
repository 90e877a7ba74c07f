"""Attack: on the CPU interpreter a ``@triton.jit`` function's body runs as plain Python, and the static provenance
check skips kernel bodies entirely (`provenance._module_findings`: ``if _is_kernel(fn, ...): continue``). The
candidate's wrapper stashes the torch tensors in a module global and launches its kernel; the kernel's body imports
the task's reference and writes the answer into the output with torch. No ``tl`` code computes anything, the
launch counter sees the candidate's own kernel launched, and the static check finds nothing: the reference import
and the torch calls it refuses on the wrapper's path are not looked at inside the kernel.

Defence: `kernel_bodies_checked`. Wanted: on the interpreter, kernel bodies are checked too (at least `DYNAMIC`, `HOST_NAMES`, imports of the
reference and torch compute), or they are refused to hold anything but ``tl``/constexpr code.
Honest twin: the baseline still scores 120 (tests/test_grader.py).
"""
import pytest

from kernelgym.discovery import get_task

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()

# The kernel's body: no assignment (the interpreter rewrites those into tl tensors), one expression statement.
KERNEL = '''
_ARGS = [None, None, None, None]


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps, BLOCK: tl.constexpr):
    from reference import rmsnorm_reference
    _ARGS[2].copy_(rmsnorm_reference(_ARGS[0], _ARGS[1], _ARGS[3]).to(_ARGS[2].dtype))


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1])
    y = torch.empty_like(x2)
    _ARGS[:] = [x2, weight, y, eps]
    rmsnorm_kernel[(1,)](x2, weight, y, x2.shape[1], x2.stride(0), y.stride(0), eps, BLOCK=1024)
    return y.reshape(x.shape)
'''
CHEAT = BASELINE[:BASELINE.index("@triton.jit")] + KERNEL


@pytest.mark.timeout(300)
def test_reference_called_from_an_interpreted_kernel_body_earns_nothing(grade):
    g = grade(CHEAT)
    assert g.compiled, g.summary()
    # Today: static_check 'passed', every config correct, 120. The kernel computed nothing of its own.
    assert g.checks["static_check"] == "failed" and not g.correct and g.score == 20.0, g.summary()


# On a GPU too: a ``@triton.constexpr_function`` runs as Python on the host while the kernel that calls it compiles
# (in the checked and the observed run alike). Reached only from a kernel's body, which the check never reads, its
# own body is not checked either: file access, the reference, torch compute all pass.
HELPER = BASELINE.replace('''@triton.jit
def rmsnorm_kernel(''', '''@triton.constexpr_function
def block_for(n):
    import reference
    open("check_result.json", "w").write(str(reference.rmsnorm_reference))
    return 1024


@triton.jit
def rmsnorm_kernel(''').replace("    row = tl.program_id(0)\n", "    row = tl.program_id(0)\n    B2: tl.constexpr = block_for(BLOCK)\n", 1)


def test_a_constexpr_function_called_from_a_kernel_is_checked():
    from kernelgym.grader.provenance import check_source
    assert "block_for(BLOCK)" in HELPER and "import reference" in HELPER
    findings = check_source({"kernel.py": HELPER}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")
    # Today: no finding at all (the helper is reached only from rmsnorm_kernel's body, which is skipped).
    assert any("reference" in str(f) for f in findings) and any("open" in str(f) for f in findings), findings
