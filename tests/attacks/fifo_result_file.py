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


def test_tensors_are_loaded_from_a_private_snapshot(tmp_path):
    """The outputs file is copied once (a memfd the candidate cannot reach) and loaded from that copy, its tensors
    mapped from it: what the candidate writes to the file afterwards, in place, changes nothing loaded; the caps
    and the refusals of links and FIFOs hold for the snapshot too."""
    import os

    from kernelgym.grader.untrusted import UntrustedFileError, load_tensors_untrusted, snapshot_untrusted
    saved = {"0/out": torch.arange(1 << 16, dtype=torch.float32), "1/out": torch.ones(3, 5, dtype=torch.float16)}
    torch.save(saved, tmp_path / "outputs.pt")
    original = (tmp_path / "outputs.pt").read_bytes()
    with snapshot_untrusted(tmp_path / "outputs.pt", 1 << 30) as snap:
        with open(tmp_path / "outputs.pt", "r+b") as f:  # the candidate's process writes over it, in place
            f.write(b"\xff" * len(original))
        assert snap.read() == original
    torch.save(saved, tmp_path / "outputs.pt")

    def mapped():
        with open("/proc/self/maps") as maps:
            return sum("kernelgym-untrusted" in line for line in maps)

    before = mapped()
    loaded = load_tensors_untrusted(tmp_path / "outputs.pt")
    assert mapped() > before  # mapped from the snapshot, not read into memory
    with open(tmp_path / "outputs.pt", "r+b") as f:
        f.write(b"\0" * len(original))
    assert loaded.keys() == saved.keys() and all(torch.equal(loaded[k], saved[k]) for k in saved)
    loaded["0/out"].add_(1)  # a mapped tensor is this process's own copy once written (copy on write)
    assert torch.equal(loaded["0/out"], saved["0/out"] + 1)
    os.symlink(tmp_path / "outputs.pt", tmp_path / "link.pt")
    os.mkfifo(tmp_path / "fifo.pt")
    for name, match in [("link.pt", "cannot open"), ("fifo.pt", "not a regular file")]:
        with pytest.raises(UntrustedFileError, match=match):
            snapshot_untrusted(tmp_path / name, 1 << 30)
    with pytest.raises(UntrustedFileError, match="more than the 100 allowed"):
        snapshot_untrusted(tmp_path / "outputs.pt", 100)
    torch.save({"0/out": torch.ones(3)}, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(UntrustedFileError, match="not a torch.save zip archive"):
        load_tensors_untrusted(tmp_path / "legacy.pt")


def test_a_snapshot_is_copied_where_the_kernel_cannot_send_the_file(tmp_path, monkeypatch):
    """A filesystem sendfile does not read from (FUSE, some network ones: EINVAL) gets the same snapshot through
    this process's memory, under the same cap; any other error is an unreadable file."""
    import errno

    from kernelgym.grader import untrusted

    def refuses(*args):
        raise OSError(errno.EINVAL, "Invalid argument")

    data = bytes(range(256)) * 9000  # over one 1 MiB read
    (tmp_path / "outputs.pt").write_bytes(data)
    monkeypatch.setattr(untrusted, "_sendfile", refuses)
    with untrusted.snapshot_untrusted(tmp_path / "outputs.pt", 1 << 30) as snap:
        assert snap.read() == data
    grows = tmp_path / "grows.pt"  # under the cap when opened, past it when copied: stopped one byte past the cap
    grows.write_bytes(data[:1000])
    real_open = untrusted._open_regular

    def open_then_grow(path, max_bytes):
        fd = real_open(path, max_bytes)
        grows.write_bytes(data)
        return fd

    monkeypatch.setattr(untrusted, "_open_regular", open_then_grow)
    with pytest.raises(untrusted.UntrustedFileError, match="more than the 1000 bytes allowed"):
        untrusted.snapshot_untrusted(grows, 1000)
    monkeypatch.setattr(untrusted, "_open_regular", real_open)

    def fails(*args):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(untrusted, "_sendfile", fails)
    with pytest.raises(untrusted.UntrustedFileError, match="unreadable"):
        untrusted.snapshot_untrusted(tmp_path / "outputs.pt", 1 << 30)
