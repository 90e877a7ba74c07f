"""Attack: outputs.pt as a zip bomb: 64 MB of zeros compressed to about 64 KB on disk, which loading would unpack
in the trusted parent (gigabytes, at a larger scale).

Defence: `unpacked_size_cap` (the archive's total uncompressed size is checked before loading, against a cap from
the references' sizes).
Honest twin: the harness's own outputs.pt, within the cap, is loaded (every honest grading).
"""
import zipfile

import pytest


def test_zip_bomb_outputs_are_refused(tmp_path):
    from kernelgym.grader.untrusted import UntrustedFileError, load_tensors_untrusted
    with zipfile.ZipFile(tmp_path / "bomb.pt", "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data/0", b"\0" * (64 << 20))  # 64 MB of zeros, ~64 KB on disk
    assert (tmp_path / "bomb.pt").stat().st_size < 1 << 20
    with pytest.raises(UntrustedFileError, match="unpacks to"):
        load_tensors_untrusted(tmp_path / "bomb.pt", max_unpacked_bytes=8 << 20)
