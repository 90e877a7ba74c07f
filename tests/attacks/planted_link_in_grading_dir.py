"""Attack: a symlink planted where the trusted parent is about to write a file (the grading directory's
kernel.py, request.json), pointing at a host file, so that the parent overwrites the host file.

Defence: `no_write_through_links` (the parent creates every file with O_EXCL | O_NOFOLLOW: it never writes through
anything already at the path).
Honest twin: none (the parent writes only where nothing is).
"""
import pytest


def test_grading_dir_writes_never_follow_planted_links(tmp_path):
    from kernelgym.grader.files import write_new
    target = tmp_path / "host_file"
    (tmp_path / "gdir").mkdir()
    (tmp_path / "gdir" / "kernel.py").symlink_to(target)
    with pytest.raises(FileExistsError):
        write_new(tmp_path / "gdir" / "kernel.py", b"payload")
    assert not target.exists()
