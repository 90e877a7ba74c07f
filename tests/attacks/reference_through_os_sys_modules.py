"""Attack: call the task's reference, which the harness has already loaded (it is the input builder's module,
``kernelgym_inputs``), through ``os.sys.modules``: the static check refuses the name ``sys`` (`DYNAMIC`) and any
import of the reference, but not the attribute ``sys`` of the os module, nor a call through a plain local name. The
wrapper launches a kernel of its own that does nothing (the launch counter is satisfied) and stores the
reference's answer into its output with a subscript assignment (no refused method). On the CPU interpreter (and on
AMD: no observer) this scores 120 with no kernel doing any work; the static check says 'passed'.

Defence: `refused_names_as_attributes`. Wanted: `os.sys` (and ``<module>.sys``/``.modules`` generally) refused on the path like ``sys``.
"""
import pytest

from kernelgym.discovery import get_task

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()

CHEAT = '''import os

import torch
import triton
import triton.language as tl


@triton.jit
def token_kernel(p):
    pass


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    answer = os.sys.modules.get("kernelgym_inputs").rmsnorm_reference
    y = torch.empty_like(x)
    token_kernel[(1,)](y)
    y[:] = answer(x, weight, eps)
    return y
'''


@pytest.mark.timeout(300)
def test_reference_reached_through_os_sys_earns_nothing(grade):
    from kernelgym.grader.provenance import check_source
    findings = check_source({"kernel.py": CHEAT}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")
    g = grade(CHEAT)
    # Today: no finding, static_check 'passed', all configs correct, 120.
    assert findings and g.checks["static_check"] == "failed" and g.score == 20.0, (findings, g.summary())


# The same hole for `HOST_NAMES`/`OS_HOST`: they are refused only on a name bound to os, not on the os module reached
# as another module's attribute (triton.runtime.cache imports os). Environment reads and file writes pass.
THROUGH_TRITON = '''import torch
import triton
import triton.runtime.cache


def rmsnorm(x, weight, eps=1e-6):
    seen = triton.runtime.cache.os.environ.get("CUDA_INJECTION64_PATH")
    fd = triton.runtime.cache.os.open("check_result.json", 65)
    triton.runtime.cache.os.write(fd, b"{}")
    return x
'''


def test_os_reached_as_another_modules_attribute_is_refused():
    from kernelgym.grader.provenance import check_source
    findings = check_source({"kernel.py": THROUGH_TRITON}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")
    assert len(findings) >= 3, findings  # today: []


# And the names `DYNAMIC` and `PROCESS_MODULES` refuse: builtins (exec, eval, __import__ are its attributes) and
# subprocess, reached as attributes of triton's own modules. Any code at all then runs unchecked.
THROUGH_TRITON_BUILTINS = '''import torch
import triton
import triton.runtime.autotuner
import triton.testing


def rmsnorm(x, weight, eps=1e-6):
    triton.runtime.autotuner.builtins.exec("import reference")
    triton.testing.subprocess.run(["true"])
    return x
'''


def test_exec_and_subprocess_reached_through_triton_modules_are_refused():
    from kernelgym.grader.provenance import check_source
    findings = check_source({"kernel.py": THROUGH_TRITON_BUILTINS}, "kernel.py:rmsnorm",
                            "reference.py:rmsnorm_reference")
    assert len(findings) >= 2, findings  # today: []
