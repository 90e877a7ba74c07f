"""Attack: outputs.pt as a zip bomb: 64 MB of zeros compressed to about 64 KB on disk, which loading would unpack
in the trusted parent (gigabytes, at a larger scale).

Variants: a second central directory appended, every size in it 1 byte (Python's zipfile reads that one, torch's
reader the first); a legacy (non-zip) archive with a small zip appended (torch.load takes its legacy loader).

Defence: `unpacked_size_cap` (the archive's total uncompressed size, as torch's own zip reader sees it, is checked
before loading, against a cap from the references' sizes; a file must be a zip from its first byte).
Honest twin: the harness's own outputs.pt, within the cap, is loaded (every honest grading).
"""
import zipfile

import pytest


def test_zip_bomb_outputs_are_refused(tmp_path):
    import torch

    from kernelgym.grader.untrusted import UntrustedFileError, load_tensors_untrusted
    with zipfile.ZipFile(tmp_path / "bomb.pt", "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in _zip_entries({"0/y": torch.ones(4)}):  # a torch archive whose tensor's record is 64 MB
            z.writestr(name, b"\0" * (64 << 20) if name.endswith("data/0") else data)  # of zeros, ~64 KB on disk
    assert (tmp_path / "bomb.pt").stat().st_size < 1 << 20
    with pytest.raises(UntrustedFileError, match="unpacks to"):
        load_tensors_untrusted(tmp_path / "bomb.pt", max_unpacked_bytes=8 << 20)
    z = tmp_path / "not-torch.pt"
    with zipfile.ZipFile(z, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data/0", b"\0" * 1024)  # a zip, but no torch archive: refused before loading
    with pytest.raises(UntrustedFileError, match="not a torch.save zip archive"):
        load_tensors_untrusted(z, max_unpacked_bytes=8 << 20)


def _zip_entries(obj):
    """(name, bytes) of each record of `obj` as torch.save writes it."""
    import io

    import torch

    from torch.serialization import get_crc32_options, set_crc32_options

    buffer, crc = io.BytesIO(), get_crc32_options()
    set_crc32_options(True)  # zipfile checks them; a test beside this one may have turned them off
    try:
        torch.save(obj, buffer)
    finally:
        set_crc32_options(crc)
    archive = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    return [(i.filename, archive.read(i.filename)) for i in archive.infolist()]


def test_a_second_central_directory_does_not_hide_a_bomb(tmp_path):
    """Python's zipfile reads the central directory that ends right before the end record; torch's zip reader the
    one at the end record's offset field. A copy of the directory appended with every size set to 1 byte showed
    zipfile a 1-byte archive while torch inflated data.pkl (deflated zeros after its pickle) to 64 MB: the size is
    taken from torch's own reader."""
    import struct

    import torch

    from kernelgym.grader.untrusted import UntrustedFileError, load_tensors_untrusted
    entries = [(n, b + b"\0" * (64 << 20) if n.endswith("data.pkl") else b)
               for n, b in _zip_entries({"0/y": torch.ones(4)})]
    plain = tmp_path / "plain.pt"
    with zipfile.ZipFile(plain, "w") as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name), data, compress_type=zipfile.ZIP_DEFLATED if name.endswith("data.pkl")
                       else zipfile.ZIP_STORED)
    data = plain.read_bytes()
    end = data.rindex(b"PK\x05\x06")
    size, offset = struct.unpack("<II", data[end + 12:end + 20])
    directory = bytearray(data[offset:offset + size])
    at = 0
    while at < len(directory):
        names, extra, comment = struct.unpack("<HHH", directory[at + 28:at + 34])
        struct.pack_into("<I", directory, at + 24, 1)  # uncompressed size: 1 byte
        at += 46 + names + extra + comment
    (tmp_path / "outputs.pt").write_bytes(data[:offset + size] + bytes(directory) + data[end:])
    assert sum(i.file_size for i in zipfile.ZipFile(tmp_path / "outputs.pt").infolist()) == len(entries)
    with pytest.raises(UntrustedFileError, match="unpacks to"):
        load_tensors_untrusted(tmp_path / "outputs.pt", max_bytes=8 << 20, max_unpacked_bytes=8 << 20)


def test_a_legacy_archive_with_a_zip_appended_is_not_a_zip(tmp_path):
    """torch.load takes its legacy (non-zip) loader for a file that does not start with a zip header, whatever zip
    follows; the size check, made on the zip, would then not be what was loaded."""
    import io

    import torch

    from kernelgym.grader.untrusted import UntrustedFileError, load_tensors_untrusted
    legacy = io.BytesIO()
    torch.save({"0/y": torch.ones(4)}, legacy, _use_new_zipfile_serialization=False)
    small = io.BytesIO()
    torch.save({"0/y": torch.ones(1)}, small)
    (tmp_path / "outputs.pt").write_bytes(legacy.getvalue() + small.getvalue())
    with pytest.raises(UntrustedFileError, match="not a torch.save zip archive"):
        load_tensors_untrusted(tmp_path / "outputs.pt")


def test_the_snapshot_is_sealed(tmp_path):
    """No process that reaches the snapshot's memfd can write, grow or shrink it under the tensors mapped from it."""
    import fcntl
    import os

    import torch

    from kernelgym.grader.untrusted import snapshot_untrusted
    torch.save({"0/y": torch.ones(4)}, tmp_path / "outputs.pt")
    with snapshot_untrusted(tmp_path / "outputs.pt", 1 << 20) as snap:
        seals = fcntl.fcntl(snap.fileno(), fcntl.F_GET_SEALS)
        for seal in (fcntl.F_SEAL_SHRINK, fcntl.F_SEAL_GROW, fcntl.F_SEAL_WRITE, fcntl.F_SEAL_SEAL):
            assert seals & seal, seal
        with pytest.raises(PermissionError):
            os.pwrite(os.open(f"/proc/self/fd/{snap.fileno()}", os.O_RDWR), b"x", 0)
