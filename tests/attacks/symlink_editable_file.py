"""Attack: the editable file in the workspace (kernel.py), or a directory on its path, is a symlink to a host file
(private data, the grader itself): the trusted parent, copying the editable files into the grading directory,
would copy that file in and the candidate could read it, or have it graded.

Defence: `no_symlinked_editable_files` (the real path of the file's directory must be the workspace's own, and the
file is opened with O_NOFOLLOW: a symlinked directory on the way is caught too, not only the last component).
Honest twin: a real file in a real subdirectory is copied (second test, end).
"""
from kernelgym.discovery import get_task
from kernelgym.grader import Grader
from kernelgym.hardware import detect_profile

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()


def test_symlinked_kernel_is_refused(grade, tmp_path):
    (tmp_path / "elsewhere.py").write_text(BASELINE)
    g = grade(None)
    ws = tmp_path / "ws"
    (ws / "kernel.py").unlink()
    (ws / "kernel.py").symlink_to(tmp_path / "elsewhere.py")
    g = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading2").grade(ws, seed=1)
    assert g.score == 0.0 and "symlink" in g.stages[0].messages[0]


def test_an_editable_file_under_a_symlinked_directory_is_not_copied(tmp_path):
    # Only the last component used to be checked: a symlinked directory on the way let the trusted parent copy a
    # host file of that name into the grading directory (a task may have editable files in subdirectories).
    from kernelgym.grader.files import copy_editable
    secret = tmp_path / "host"
    secret.mkdir()
    (secret / "kernel.py").write_text("HOST SECRET")
    ws, dest = tmp_path / "ws", tmp_path / "dest"
    ws.mkdir()
    dest.mkdir()
    (ws / "sub").symlink_to(secret)
    task = type("T", (), {"spec": type("S", (), {"editable_files": ["sub/kernel.py"]})()})()
    problems = copy_editable(task, ws, dest)
    assert problems and "symlink" in problems[0] and not (dest / "sub" / "kernel.py").exists()
    (ws / "sub").unlink()
    (ws / "sub").mkdir()
    (ws / "sub" / "kernel.py").write_text("mine")
    (dest / "sub").mkdir()
    assert copy_editable(task, ws, dest) == [] and (dest / "sub" / "kernel.py").read_text() == "mine"
