"""Reading files the candidate's process could have written or replaced.

Everything in a grading directory is under the candidate's control: a result may be a symlink to a host file,
a FIFO that never ends, /dev/zero, or nested JSON that blows the stack. These readers open without following
symlinks and without blocking, accept only regular files under a size cap, and raise `UntrustedFileError`
with a message for the grade instead of hanging or crashing the env.
"""
from __future__ import annotations

import io
import json
import os
import stat
import zipfile
from pathlib import Path
from typing import Any


class UntrustedFileError(Exception):
    """A candidate-written file is missing, not a regular file, too large, or malformed."""


def read_untrusted(path: Path, max_bytes: int) -> bytes:
    """The bytes of `path` if it is a regular file (not a symlink) of at most `max_bytes`."""
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


def load_tensors_untrusted(path: Path, max_bytes: int = 8 << 30, max_unpacked_bytes: int = 8 << 30) -> dict[str, Any]:
    """A dict saved by torch.save (zip format), loaded with weights_only=True (no code runs).

    `max_unpacked_bytes` caps the archive's total uncompressed size, checked before loading: a few MB of
    compressed zeros must not become gigabytes in the trusted process.
    """
    import torch

    data = read_untrusted(path, max_bytes)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            unpacked = sum(i.file_size for i in z.infolist())
    except (zipfile.BadZipFile, ValueError, RuntimeError):
        raise UntrustedFileError(f"{path.name}: not a torch.save zip archive") from None
    if unpacked > max_unpacked_bytes:
        raise UntrustedFileError(f"{path.name}: unpacks to {unpacked} bytes, more than the {max_unpacked_bytes} allowed")
    try:
        obj = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception as e:  # noqa: BLE001 - any malformed file is the candidate's failure
        raise UntrustedFileError(f"{path.name}: unreadable ({type(e).__name__}: {str(e)[:200]})") from None
    if not isinstance(obj, dict):
        raise UntrustedFileError(f"{path.name}: expected a dict of tensors")
    return obj
