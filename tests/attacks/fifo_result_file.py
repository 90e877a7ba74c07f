"""Attack: the candidate puts something else where the parent reads its results (check_result.json, outputs.pt): a
FIFO (a read would block forever), a directory, a symlink to a host file or to /dev/zero (endless), JSON nested
100000 deep, a file far over the size cap, a JSON list or a pickled list instead of an object; or it patches
torch.save so that the harness itself writes garbage.

Defence: `untrusted_file_reader` (every candidate-written file is opened O_NOFOLLOW | O_NONBLOCK and read only as
a regular file under a size cap, then parsed into the expected shape; anything else is a failed stage with a
message, never a hang or a crash).
The torch.save patch is graded with the static provenance check off, which refuses it first.
Honest twin: the harness's own results, regular files of the expected shape, are read (every honest grading).
"""
import pytest
import torch

from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()


@pytest.mark.timeout(300)
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


def test_untrusted_readers_refuse_links_fifos_devices_and_bombs(tmp_path):
    import os

    from kernelgym.grader.untrusted import UntrustedFileError, load_json_untrusted, load_tensors_untrusted
    (tmp_path / "secret").write_text('{"stage": "check"}')
    os.symlink(tmp_path / "secret", tmp_path / "link.json")
    os.mkfifo(tmp_path / "fifo.json")
    os.symlink("/dev/zero", tmp_path / "zero.json")
    (tmp_path / "nested.json").write_text("[" * 100000 + "]" * 100000)
    (tmp_path / "list.json").write_text("[]")
    (tmp_path / "big.json").write_text(" " * 5000)
    for name, match in [("link.json", "cannot open"), ("fifo.json", "not a regular file"),
                        ("zero.json", "cannot open"), ("nested.json", "not valid JSON"),
                        ("list.json", "expected a JSON object"), ("missing.json", "cannot open")]:
        with pytest.raises(UntrustedFileError, match=match):
            load_json_untrusted(tmp_path / name)
    with pytest.raises(UntrustedFileError, match="more than the 100 allowed"):
        load_json_untrusted(tmp_path / "big.json", max_bytes=100)
    torch.save(["not", "a", "dict"], tmp_path / "o.pt")
    with pytest.raises(UntrustedFileError, match="expected a dict"):
        load_tensors_untrusted(tmp_path / "o.pt")


@pytest.mark.timeout(300)
def test_candidate_sabotaging_its_own_result_files_scores_20(grade):
    # At import: outputs.pt made a symlink to a host file and torch.save patched to write garbage.
    src = BASELINE + '''
import os as _os, torch as _torch
_d = _os.path.dirname(_os.path.abspath(__file__))
_torch.save = lambda obj, path, *a, **k: open(path, "w").write("[]")
'''
    g = grade(src, config=GraderConfig(static_check=False))
    assert g.compiled and not g.correct and g.score == 20.0
    assert "unreadable" in "\n".join(g.stages[1].messages)
