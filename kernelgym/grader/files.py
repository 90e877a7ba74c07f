"""Building a grading directory: the candidate's editable files copied out of the workspace beside pristine copies of
the task's other public files. Only the editable files cross the trust boundary; symlinks are refused."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import NamedTuple

from kernelgym.grader.untrusted import UntrustedFileError, read_untrusted
from kernelgym.task import Task

MAX_EDITABLE_BYTES = 4 << 20  # an editable file (kernel source) larger than this is refused


def copy_candidate(task: Task, workspace: Path, dest: Path) -> list[str]:
    """Build a grading directory: the editable files from `workspace`, every other public file pristine
    from the task. Returns problems (empty when fine); a symlink or a missing editable file is one."""
    copy_public(task, dest)
    return copy_editable(task, workspace, dest)


def copy_public(task: Task, dest: Path) -> None:
    """Copy the task's public files that are not editable, pristine, into `dest` (the input builder among them)."""
    for rel in task.public_files():
        if str(rel) not in task.spec.editable_files:
            write_new(dest / rel, (task.root / rel).read_bytes())


def copy_editable(task: Task, workspace: Path, dest: Path) -> list[str]:
    """Copy the editable files from `workspace` into `dest`. Returns problems: a symlink, a missing or unreadable
    file, or one over `MAX_EDITABLE_BYTES`."""
    problems = []
    root = os.path.realpath(workspace)
    for rel in task.spec.editable_files:
        src = workspace / rel
        # Blocks a symlink to private data or to the grader itself being copied in as the "kernel", also through a
        # symlinked directory on the way (only the last component is opened with O_NOFOLLOW).
        if os.path.realpath(src.parent) != os.path.normpath(os.path.join(root, os.path.dirname(rel))):
            problems.append(f"{rel}: a directory on its path is a symlink in the workspace; it must be a real one")
            continue
        if src.is_symlink() or not src.is_file():
            problems.append(f"{rel}: {'is a symlink' if src.is_symlink() else 'missing'} in the workspace; "
                            f"it must be a regular file")
            continue
        try:
            write_new(dest / rel, read_untrusted(src, MAX_EDITABLE_BYTES))
        except UntrustedFileError as e:
            problems.append(f"{rel}: {e}")
    return problems


def identity(path: Path) -> tuple[int, int, int, int] | None:
    """(device, inode, size, ctime in ns) of `path` itself (a link is not followed), or None where it is absent: a
    file replaced by rename, or written again in place, gets another identity (ctime cannot be set by a process,
    unlike mtime)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns


def write_new(path: Path, data: bytes) -> None:
    # O_EXCL | O_NOFOLLOW: never write through anything already at the path (a planted symlink).
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


#: The most entries `copy_regular_files` visits: a kernel cache holds a few files per kernel, and a candidate's tree of
#: many empty files must not cost the parent a copy each.
MAX_COPIED_ENTRIES = 4096


def copy_regular_files(src: Path, dest: Path, max_bytes: int, suffixes: tuple[str, ...] | None = None) -> int:
    """Copy the regular files under `src` (a tree a candidate could write) whose names end in one of `suffixes` (all,
    where None) into `dest`, keeping their relative paths; links, devices and FIFOs are skipped and nothing is
    followed out of `src`; stops once `max_bytes` are copied or `MAX_COPIED_ENTRIES` entries visited. Returns the
    bytes copied (0 where `src` is not a directory)."""
    copied, visited = 0, 0
    if not src.is_dir() or src.is_symlink():
        return 0
    # An explicit stack, not os.walk, which recurses (a candidate's tree 3000 deep raised RecursionError).
    stack = [src]
    while stack:
        directory = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            visited += 1
            if visited > MAX_COPIED_ENTRIES:
                return copied
            path = Path(entry.path)
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(path)
                continue
            if suffixes is not None and not entry.name.endswith(suffixes):
                continue
            if not stat.S_ISREG(st.st_mode) or copied + st.st_size > max_bytes:
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as f:
                    data = f.read(st.st_size + 1)[:st.st_size]
                if entry.name.startswith("__grp__") and entry.name.endswith(".json"):
                    data = rebase_cache_group(data, src, dest)
                    if data is None:
                        continue
                write_new(dest / path.relative_to(src), data)
            except OSError:
                continue
            copied += len(data)
    return copied


def rebase_cache_group(data: bytes, src: Path, dest: Path) -> bytes | None:
    """A Triton cache group file (``__grp__<name>.json``: ``{"child_paths": {file name: absolute path}}``) moved from
    the cache `src` to `dest`: Triton finds a compiled kernel through these absolute paths, so a copy that kept them
    would point where the copying process's sandbox cannot see, and Triton would compile again. Paths outside `src`
    are dropped. Returns the new file's bytes, or None where `data` is not such a file."""
    prefix = str(src) + os.sep
    try:
        children = json.loads(data)["child_paths"]
        moved = {str(name): str(dest) + os.sep + path[len(prefix):] for name, path in children.items()
                 if isinstance(path, str) and path.startswith(prefix) and ".." not in Path(path).parts}
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    return json.dumps({"child_paths": moved}).encode()



#: What `prune_grading_dir` keeps: the harness's log and result files (by name: the candidate can add no more), for
#: diagnosing a grade after the fact.
KEPT_NAMES = ("harness.log", "check_result.json", "time_result.json")
MAX_KEPT_BYTES = 1 << 20


def prune_grading_dir(path: Path) -> None:
    """Once a grade is read: remove everything in the grading directory `path` but the harness's log and result
    files (`KEPT_NAMES`, each at most `MAX_KEPT_BYTES`): the output tensors, caches, builds and whatever the candidate
    left there would otherwise stay on disk for every grading (hundreds of MB each for large configs). Best effort:
    what cannot be removed stays. Links are removed, never followed."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and entry.name in KEPT_NAMES and st.st_size <= MAX_KEPT_BYTES:
                continue
            if stat.S_ISDIR(st.st_mode):
                remove_tree(Path(entry.path))
            else:
                os.unlink(entry.path)
        except OSError:
            pass


def remove_tree(path: Path) -> None:
    """Remove `path` and everything under it, links never followed; best effort (what cannot be removed stays).
    Python's rmtree recurses (a candidate's folder 3000 deep raised RecursionError in Python 3.11) and gives up on a
    folder left mode 0; what it leaves goes to coreutils' ``chmod -R`` and ``rm -rf``, which take any depth and, run
    like this, follow no link."""
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        pass
    if os.path.lexists(path):
        for argv in (["chmod", "-R", "u+rwx", "--", str(path)], ["rm", "-rf", "--one-file-system", "--", str(path)]):
            try:
                subprocess.run(argv, capture_output=True, timeout=300)
            except (OSError, subprocess.TimeoutExpired):
                pass


class TreeUsage(NamedTuple):
    """What a tree holds: `bytes` of disk (allocated blocks) and `entries` (files, directories, links and the rest
    under the root, the root itself not counted). Where the walk stopped early (a cap passed), both are lower
    bounds."""

    bytes: int
    entries: int
    unreadable: int = 0
    """Directories under the root the walk could not list (made unreadable by their owner): what they hold is not
    counted, so a cap cannot be judged below them."""


def tree_usage(root: Path, stop_above_bytes: int, stop_above_entries: int | None = None) -> TreeUsage:
    """Disk space and entry count of the tree under `root`, in one walk: bytes are allocated blocks (a sparse file
    counts what it uses) of every entry, directories and `root` itself included; entries are every name under `root`
    (an empty file costs an inode and no block). Links are neither followed nor descended; linear in the entries
    walked, without recursion. The walk stops once bytes pass `stop_above_bytes` or entries pass
    `stop_above_entries` (None: no entry cap), so a huge tree costs no more than the caps say."""
    total, entries, unreadable, stack = 0, 0, 0, [str(root)]
    max_entries = stop_above_entries if stop_above_entries is not None else float("inf")
    try:
        total += os.lstat(root).st_blocks * 512
    except OSError:
        pass
    while stack and total <= stop_above_bytes and entries <= max_entries:
        path = stack.pop()
        try:
            listing = os.scandir(path)
        except FileNotFoundError:
            continue
        except OSError:
            unreadable += path != str(root)
            continue
        with listing:
            for entry in listing:
                entries += 1
                try:
                    # Directories count their own blocks too: each takes at least one, and a listing of many long
                    # names takes many, so a tree of empty directories or empty files would otherwise fill the disk
                    # uncounted.
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                except OSError:
                    pass
                if total > stop_above_bytes or entries > max_entries:  # one directory of millions stops here too
                    break
    return TreeUsage(total, entries, unreadable)


def tree_bytes(root: Path, stop_above: int) -> int:
    """Disk space the files and directories under `root` (itself included) take, bytes: `tree_usage`'s bytes (the
    walk stops once the count passes `stop_above`)."""
    return tree_usage(root, stop_above).bytes
