"""Attack: the candidate puts a FIFO (or a directory) where the parent reads its result (check_result.json): a read
would block forever, or fail in a way the parent does not expect.

Defence: `untrusted_file_reader` (every candidate-written file is opened O_NOFOLLOW | O_NONBLOCK and read only as
a regular file under a size cap; anything else is a failed stage with a message, never a hang).
Honest twin: the harness's own result, a regular file, is read (every honest grading).
"""
import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()


def test_candidate_making_result_a_fifo_does_not_hang(grade):
    src = BASELINE + '''
import os as _os
_d = _os.path.dirname(_os.path.abspath(__file__))
_os.mkfifo(_os.path.join(_d, "check_result.json"))
'''
    g = grade(src, config=GraderConfig(timeout_s=15.0))
    assert g.score <= 20.0 and not g.correct


def test_a_directory_result_is_refused(tmp_path):
    from kernelgym.grader.untrusted import UntrustedFileError, load_json_untrusted
    (tmp_path / "check_result.json").mkdir()
    with pytest.raises(UntrustedFileError, match="not a regular file"):
        load_json_untrusted(tmp_path / "check_result.json")
