"""Attack: the candidate tampers with the kernel tracer (loaded into its own process, as ncu's injection library is):
it runs its library work in a child process (a second trace), exits or is killed before the trace's end line, makes
CUPTI drop records, or launches a kernel after the harness's cache flush so that it passes as the flush.

Defence: `kernel_trace_complete` (`tracer.parse_trace` takes one process's trace with its end line, a matching record
count and no dropped record; `observer.split(flushed=True)` drops only the last kernel before each marker, which must
be the harness's flush). Honest twin: a real H200 trace of the rmsnorm kernel passes (tests/test_tracer.py).
"""
import shutil
from pathlib import Path

import pytest

from kernelgym.grader import tracer
from kernelgym.grader.observer import FLUSH_KERNEL, Kernel, ObserverError, foreign_kernels, split

DATA = Path(__file__).resolve().parents[1] / "data" / "tracer"
N = 5


def real(tmp_path):
    shutil.copy(DATA / "rmsnorm_fast.trace", tmp_path / f"{tracer.TRACE_PREFIX}.2")
    return tmp_path


def test_library_work_in_a_child_process_is_a_second_trace(tmp_path):
    (real(tmp_path) / f"{tracer.TRACE_PREFIX}.9").write_text(
        "kernelgym-trace 1 9\n100\t200\t1\tsm90_xmma_gemm_cublas\nend 1 0\n")
    with pytest.raises(ObserverError, match="2 processes"):
        tracer.parse_trace(tmp_path, Path.read_bytes)


def test_a_trace_cut_before_its_end_line_is_refused(tmp_path):
    path = real(tmp_path) / f"{tracer.TRACE_PREFIX}.2"
    path.write_text("\n".join(path.read_text().splitlines()[:-1]) + "\n")
    with pytest.raises(ObserverError, match="incomplete"):
        tracer.parse_trace(tmp_path, Path.read_bytes)


def test_dropped_records_are_refused(tmp_path):
    path = real(tmp_path) / f"{tracer.TRACE_PREFIX}.2"
    path.write_text(path.read_text().replace("end 25 0", "end 25 3"))
    with pytest.raises(ObserverError, match="dropped 3"):
        tracer.parse_trace(tmp_path, Path.read_bytes)


def test_a_kernel_hidden_after_the_flush_is_seen(tmp_path):
    kernels = tracer.parse_trace(real(tmp_path), Path.read_bytes)
    flush = [i for i, k in enumerate(kernels) if FLUSH_KERNEL in k.name][1]  # ends the first checked call's part
    # A reduction of the candidate's launched after the harness's flush (from a thread) passes as the flush, which
    # then stays in the part: PyTorch's reduction, not the candidate's kernel, so the config fails.
    library = Kernel("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(float*)", 5e3)
    obs = split(kernels[:flush + 1] + [library] + kernels[flush + 1:], N, flushed=True)
    assert any(FLUSH_KERNEL in name for name in foreign_kernels(obs, {"rmsnorm_kernel"}, bare=True)[0])
    other = Kernel("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>()", 5e3)
    with pytest.raises(ObserverError, match="cache flush"):  # anything else last: the part lacks the flush
        split(kernels[:flush + 1] + [other] + kernels[flush + 1:], N, flushed=True)
    obs = split(kernels[:flush] + [other] + kernels[flush:], N, flushed=True)  # before the flush: in the call
    assert any("AddFunctor" in name for name in foreign_kernels(obs, {"rmsnorm_kernel"}, bare=True)[0])
