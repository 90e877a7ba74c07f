"""Reading files the candidate's process could have written or replaced.

Everything in a grading directory is under the candidate's control: a result may be a symlink to a host file,
a FIFO that never ends, /dev/zero, or nested JSON that blows the stack. These readers open without following
symlinks and without blocking, accept only regular files under a size cap, and raise `UntrustedFileError`
with a message for the grade instead of hanging or crashing the env.
"""
from __future__ import annotations

import errno
import fcntl
import io
import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO


class UntrustedFileError(Exception):
    """A candidate-written file is missing, not a regular file, too large, or malformed."""


def _open_regular(path: Path, max_bytes: int) -> int:
    """A descriptor of `path`, opened without following a symlink or blocking, where it is a regular file of at most
    `max_bytes` (at the open: a writer may still grow it, so readers cap what they read too)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        raise UntrustedFileError(f"{path.name}: cannot open ({e.strerror}); it must be a regular file") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # a directory, FIFO, socket or device
            raise UntrustedFileError(f"{path.name}: not a regular file")
        if st.st_size > max_bytes:
            raise UntrustedFileError(f"{path.name}: {st.st_size} bytes, more than the {max_bytes} allowed")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_untrusted(path: Path, max_bytes: int) -> bytes:
    """The bytes of `path` if it is a regular file (not a symlink) of at most `max_bytes`."""
    fd = _open_regular(path, max_bytes)
    try:
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        data = b"".join(chunks)
    except OSError as e:
        raise UntrustedFileError(f"{path.name}: unreadable ({e.strerror})") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise UntrustedFileError(f"{path.name}: more than the {max_bytes} bytes allowed")
    return data


def load_json_untrusted(path: Path, max_bytes: int = 4 << 20) -> dict[str, Any]:
    """A JSON object from a candidate-written file."""
    try:
        obj = json.loads(read_untrusted(path, max_bytes))
    except (ValueError, RecursionError) as e:
        raise UntrustedFileError(f"{path.name}: not valid JSON ({type(e).__name__})") from None
    if not isinstance(obj, dict):
        raise UntrustedFileError(f"{path.name}: expected a JSON object")
    return obj


def snapshot_untrusted(path: Path, max_bytes: int) -> BinaryIO:
    """A private copy of `path` (a regular file, not a symlink, of at most `max_bytes`) as a binary file object at
    offset 0, which no other process can change: an anonymous memory file (memfd) filled by the kernel, where the
    platform has one; else the bytes in memory. The caller closes it.

    Raises:
        UntrustedFileError: not a regular file, larger than `max_bytes` (at the open or while copied), unreadable."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is None:
        return io.BytesIO(read_untrusted(path, max_bytes))
    fd = _open_regular(path, max_bytes)
    snap = memfd_create("kernelgym-untrusted", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        total, copy = 0, _sendfile
        while total <= max_bytes:
            try:
                sent = copy(snap, fd, total, min(1 << 30, max_bytes + 1 - total))
            except OSError as e:
                if copy is _read_write or e.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    raise
                copy = _read_write  # a filesystem sendfile does not read from (FUSE, some network ones)
                continue
            if not sent:
                break
            total += sent
        if total > max_bytes:
            raise UntrustedFileError(f"{path.name}: more than the {max_bytes} bytes allowed")
        # Sealed: a process that reaches the memfd (/proc/<pid>/fd or map_files, as root or as this user unsandboxed)
        # can neither write it nor shrink it under the tensors mapped from it (a SIGBUS in this process).
        fcntl.fcntl(snap, fcntl.F_ADD_SEALS,
                    fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SEAL)
        os.lseek(snap, 0, os.SEEK_SET)
        return os.fdopen(snap, "rb")
    except OSError as e:
        os.close(snap)
        raise UntrustedFileError(f"{path.name}: unreadable ({e.strerror})") from None
    except BaseException:
        os.close(snap)
        raise
    finally:
        os.close(fd)


def _sendfile(out_fd: int, in_fd: int, offset: int, count: int) -> int:
    """Copy up to `count` bytes at `offset` of `in_fd` to `out_fd`, in the kernel: page cache to page cache, no copy
    through this process's memory. The bytes copied (0 at the end of the file)."""
    return os.sendfile(out_fd, in_fd, offset, count)


def _read_write(out_fd: int, in_fd: int, offset: int, count: int) -> int:
    """`_sendfile` through this process's memory, 1 MiB at a time, where the kernel cannot copy the file."""
    data = os.pread(in_fd, min(count, 1 << 20), offset)
    view = memoryview(data)
    while view:
        view = view[os.write(out_fd, view):]
    return len(data)


def load_tensors_untrusted(path: Path, max_bytes: int = 8 << 30, max_unpacked_bytes: int = 8 << 30) -> dict[str, Any]:
    """A dict saved by torch.save (zip format), loaded with weights_only=True (no code runs), from a private copy
    (`snapshot_untrusted`): the file the candidate's process may still write is read once, and what is checked is
    what is loaded.

    `max_unpacked_bytes` caps the archive's total uncompressed size, checked before loading: a few MB of
    compressed zeros must not become gigabytes in the trusted process.

    Raises:
        UntrustedFileError: the file is not a regular file, too large, not a torch.save archive, unpacks to more
            than `max_unpacked_bytes`, or does not hold a dict.
    """
    import torch

    with snapshot_untrusted(path, max_bytes) as f:
        try:
            unpacked = _unpacked_bytes(torch, f)
        except (ValueError, RuntimeError, EOFError, OSError):
            raise UntrustedFileError(f"{path.name}: not a torch.save zip archive") from None
        if unpacked > max_unpacked_bytes:
            raise UntrustedFileError(f"{path.name}: unpacks to {unpacked} bytes, more than the "
                                     f"{max_unpacked_bytes} allowed")
        try:
            obj = _load_snapshot(torch, f)
        except Exception as e:  # noqa: BLE001 - any malformed file is the candidate's failure
            raise UntrustedFileError(f"{path.name}: unreadable ({type(e).__name__}: {str(e)[:200]})") from None
    if not isinstance(obj, dict):
        raise UntrustedFileError(f"{path.name}: expected a dict of tensors")
    return obj


def _unpacked_bytes(torch, f: BinaryIO) -> int:
    """The bytes the archive `f` unpacks to, as torch.load's own zip reader sees it: Python's zipfile reads the
    central directory that ends right before the end record, torch's reader the one the end record's offset names,
    and an archive can hold both (every record 1 byte in one, a deflated bomb in the other). A file must also be a
    zip from its first byte, as torch.load tests, which else takes its legacy loader.

    Raises:
        ValueError: no zip local header at offset 0. RuntimeError: torch's reader refuses the archive."""
    if f.read(4) != b"PK\x03\x04":
        raise ValueError("no zip local header at offset 0")
    f.seek(0)
    reader = torch._C.PyTorchFileReader(f)
    try:
        return sum(reader.get_record_size(name) for name in reader.get_all_records())
    finally:
        del reader


def _load_snapshot(torch, f: BinaryIO) -> Any:
    """torch.load (weights_only) of the snapshot `f`: where it is a memfd, its tensors mapped from it, not copied
    (89 MB: 0.01 s against 0.3-0.5 s for reading the bytes and loading from them, which copied each twice more);
    else, or where mapping fails (an archive torch.save did not align), read from it."""
    if not isinstance(f, io.BytesIO):
        try:
            return torch.load(f"/proc/self/fd/{f.fileno()}", weights_only=True, map_location="cpu", mmap=True)
        except Exception:  # noqa: BLE001 - loaded the plain way below, where its error is the one reported
            pass
    f.seek(0)
    return torch.load(f, weights_only=True, map_location="cpu")
