"""The JSON reports a task's commands write into a grading directory, read and removed by the trusted grader.

The candidate's processes could have rearranged that directory: ``build/`` may be a link to a host folder, a report
a directory, a FIFO or /dev/zero. Each folder on a report's path is opened with O_NOFOLLOW | O_DIRECTORY, one at a
time from the grading directory down, and the report itself through that folder's descriptor, so nothing outside the
grading directory is ever read or unlinked. Reports are read only once the sandbox's processes are gone.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

#: A report larger than this is refused.
MAX_REPORT_BYTES = 16 << 20


class ReportError(Exception):
    """A report path that is not a regular file under real folders, or a report too large to read."""


def _open_folder(root: Path, rel: str) -> int | None:
    """A descriptor of the folder holding `rel` under `root`; None where a folder on the way is absent."""
    parts = Path(rel).parts[:-1]
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    for i, name in enumerate(parts):
        try:
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except FileNotFoundError:
            child = None
        except OSError:  # ELOOP: a symlink; ENOTDIR: a file or FIFO
            os.close(fd)
            raise ReportError(f"{'/'.join(parts[:i + 1])} (on the path of {rel}) is a symlink or not a folder; "
                              f"it must be a real folder") from None
        os.close(fd)
        if child is None:
            return None
        fd = child
    return fd


def remove_report(root: Path, rel: str) -> None:
    """Remove a stale report `rel` under `root` (a link or FIFO there is removed, never followed).

    Raises:
        ReportError: a folder on its path is a link or not a folder, or the report is a directory.
    """
    fd = _open_folder(root, rel)
    if fd is None:
        return
    name = Path(rel).name
    try:
        if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            raise ReportError(f"{rel} is not a regular file (a directory)")
        os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)


def read_report(root: Path, rel: str, max_bytes: int = MAX_REPORT_BYTES) -> bytes | None:
    """The bytes of report `rel` under `root`, a regular file of at most `max_bytes`; None where it is absent.

    Raises:
        ReportError: a folder on its path is a link or not a folder, the report is a link or not a regular file, or
            it is larger than `max_bytes`.
    """
    folder = _open_folder(root, rel)
    if folder is None:
        return None
    try:
        # O_NONBLOCK: a FIFO must not block the open; fstat then refuses it.
        fd = os.open(Path(rel).name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ReportError(f"{rel} is not a regular file ({e.strerror})") from None
    finally:
        os.close(folder)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ReportError(f"{rel} is not a regular file")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ReportError(f"{rel}: more than the {max_bytes} bytes a report may hold")
    return data
