"""Attack: the candidate's library work gets CUPTI records with unknown timestamps (CUPTI_TIMESTAMP_UNKNOWN, 0: CUPTI
writes them where it could not collect timing, e.g. for lack of device memory, which the candidate can exhaust, or
for a record still incomplete at the forced flush). Sorted by device start, a record starting at 0 lands before the
harness's first marker, where the harness prepares its inputs and no kernel is checked: a cuBLAS GEMM there is
neither foreign nor timed.

Defence: `kernel_timestamps_known` (`tracer.parse_trace` refuses a record whose start or end is unknown: a kernel
whose place in the run cannot be known cannot be judged). Honest twin: real H200 traces, whose every record has
its timestamps, parse and pass (tests/test_tracer.py).
"""
from pathlib import Path

import pytest

from kernelgym.grader import tracer
from kernelgym.grader.observer import ObserverError, foreign_kernels, split

DATA = Path(__file__).resolve().parents[1] / "data" / "tracer"
N = 5
GEMM = "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_cublas"


def with_record(tmp_path, record):
    """The real rmsnorm trace with `record` added (and counted in its end line)."""
    lines = (DATA / "rmsnorm_fast.trace").read_text().splitlines()
    records = len(lines) - 2
    lines = lines[:-1] + [record, f"end {records + 1} 0"]
    (tmp_path / f"{tracer.TRACE_PREFIX}.2").write_text("\n".join(lines) + "\n")
    return tmp_path


@pytest.mark.parametrize("start, end", [(0, 0), (0, 5000), (1796149582100200000, 0)])
def test_a_record_with_an_unknown_timestamp_is_refused(tmp_path, start, end):
    with pytest.raises(ObserverError, match="unknown"):
        tracer.parse_trace(with_record(tmp_path, f"{start}\t{end}\t99\t{GEMM}"), Path.read_bytes)


def test_the_same_gemm_with_its_timestamps_is_seen_in_its_call(tmp_path):
    # Inside the first checked call (between its marker and the harness's flush): foreign there.
    kernels = tracer.parse_trace(with_record(tmp_path, f"1796149582100200000\t1796149582100300000\t99\t{GEMM}"),
                                 Path.read_bytes)
    assert GEMM in foreign_kernels(split(kernels, N, flushed=True), {"rmsnorm_kernel"}, bare=True)[0]
