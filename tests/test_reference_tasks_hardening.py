"""Reference-format task folders and their grader against a hostile candidate or task folder: each test is named
after the attack (docs: the security review's reproducers) it shows fixed."""
import json
import os
import shutil
import threading
from pathlib import Path

import pytest
import yaml

from kernelgym.errors import TaskSpecError
from kernelgym.grader import GraderConfig
from kernelgym.hardware import all_profiles, detect_profile
from kernelgym.reference_tasks import discover_reference_tasks, load_reference_task
from kernelgym.reference_tasks.grader import ReferenceGrader, prepare_dir, read_performance_report, run_stage
from kernelgym.reference_tasks.spec import CORRECTNESS_REPORT, COMPILE_REPORT, ReferenceTask, ReferenceTaskSpec
from kernelgym.reference_tasks.support import amd_only_features
from kernelgym.sandbox import CommandResult
from kernelgym.task import DEFAULT_TASKS_ROOT, Task, load_task, read_task_file
from kernelgym.workspace import create_workspace

DATA = Path(__file__).parent / "data" / "reference_tasks"
VLLM = DATA / "vllm_silu_and_mul"


class Candidate:
    """A sandbox stand-in: each command "runs" `act(root)`, what the candidate's process would leave behind."""

    def __init__(self, root: Path, act=lambda root: None):
        self.root, self.act = root, act

    def run(self, cmd, limits=None):
        self.act(self.root)
        return CommandResult(output="", returncode=0)


def _copy_task(tmp_path: Path, src: Path = VLLM, name: str = "task") -> Path:
    dest = tmp_path / name
    shutil.copytree(src, dest)
    return dest


def _unchecked(root: Path) -> ReferenceTask:
    """The folder as a task without `load_reference_task`'s checks: what the grader does with what slips past."""
    return ReferenceTask(ReferenceTaskSpec.model_validate(yaml.safe_load((root / "config.yaml").read_text())), root)


def _finishes(fn, timeout_s: float = 20.0):
    """`fn()`'s result, failing the test where it blocks (a FIFO read) instead of hanging the suite."""
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("value", fn()), daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), "blocked"
    return out.get("value")


# -- 1: a link planted in a folder on a report's path -----------------------------------------------------------------
def test_a2_build_symlink_parent_unlinks_host_file(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "correctness_report.json").write_text("host file that must survive\n")
    (victim / "compile_report.json").write_text(json.dumps({"status": "x", "error": "HOST-SECRET"}))
    (victim / "performance_report.json").write_text(json.dumps([{"params": {"n": 1}, "execution_time_ms": 1.0}]))
    root = tmp_path / "grading"
    root.mkdir()

    def swap_build(root):  # the compile command's last act: build/ becomes a link to the host folder
        if not (root / "build").is_symlink():
            (root / "build").symlink_to(victim)

    compile_run = run_stage(Candidate(root, swap_build), root, ["compile"], 10, COMPILE_REPORT)
    assert compile_run.passed is False and "HOST-SECRET" not in "\n".join(compile_run.messages)
    assert "build (on the path of build/compile_report.json) is a symlink" in compile_run.messages[-1]
    correct_run = run_stage(Candidate(root), root, ["correctness"], 10, CORRECTNESS_REPORT)
    assert correct_run.passed is False and "is a symlink or not a folder" in correct_run.messages[0]
    cases, error = read_performance_report(root)
    assert cases == {} and "symlink" in error
    assert sorted(os.listdir(victim)) == ["compile_report.json", "correctness_report.json", "performance_report.json"]


# -- 2: a directory or FIFO at a report path -------------------------------------------------------------------------
def test_a6_report_path_is_directory_crashes_grader(tmp_path):
    root = tmp_path / "grading"
    (root / CORRECTNESS_REPORT).mkdir(parents=True)  # left there by the compile command
    run = run_stage(Candidate(root), root, ["correctness"], 10, CORRECTNESS_REPORT)
    assert run.passed is False and "build/correctness_report.json is not a regular file" in run.messages[0]

    def fifo(root):  # written by the command itself: the report is read after it
        os.mkfifo(root / COMPILE_REPORT)
    run = _finishes(lambda: run_stage(Candidate(root, fifo), root, ["compile"], 10, COMPILE_REPORT))
    assert run.passed is False and "build/compile_report.json is not a regular file" in run.messages[-1]


# -- 3: a number JSON allows and a float cannot hold -----------------------------------------------------------------
PERF_RUNNER = """import json, os
os.makedirs("build", exist_ok=True)
open("build/performance_report.json", "w").write('[{"params": {"n": 1}, "execution_time_ms": %s}]'
                                                 % open("time.txt").read())
"""


def test_a3_perf_report_huge_int_crashes_grader(tmp_path, timed_reference_task):
    (tmp_path / "build").mkdir()
    for value in ("9" * 400, '"fast"'):
        (tmp_path / "build" / "performance_report.json").write_text(
            '[{"params": {"n": 1}, "execution_time_ms": ' + value + '}]')
        cases, error = read_performance_report(tmp_path)
        assert cases == {} and "test case 0" in error
    # Through the grader, as on a GPU: the performance stage fails, with no speedup.
    grader, ws = timed_reference_task("time.txt", "2.0", "9" * 400, PERF_RUNNER, rounds=1)
    grade = grader.grade(ws)
    assert grade.stages[2].passed is False and grade.speedup is None and grade.score == pytest.approx(120.0)
    assert "too large for a float" in grade.stages[2].messages[0]
    # Found by the second review: a time of 1e-320 ms made the speedup infinite and arena_score raised out of step().
    (ws / "time.txt").write_text("1e-320")
    grade = grader.grade(ws)
    assert grade.stages[2].passed is False and grade.speedup is None and grade.score == pytest.approx(120.0)
    assert "not a measurement" in grade.stages[2].messages[0]


# -- 4: a link in a task folder to a host file ------------------------------------------------------------------------
def test_a1_task_folder_symlink_leak(tmp_path):
    secret = tmp_path / "host_secret.txt"
    secret.write_text("TOP-SECRET-HOST-DATA\n")
    task_dir = _copy_task(tmp_path)
    (task_dir / "notes.txt").symlink_to(secret)
    (task_dir / "rootdir").symlink_to(tmp_path)
    (task_dir / "data.txt").write_text("task data\n")
    (task_dir / "data_link.txt").symlink_to("data.txt")  # inside the folder: copied as its contents
    with pytest.raises(TaskSpecError, match="notes.txt: a symlink to .* outside the task folder") as e:
        load_reference_task(task_dir)
    assert "rootdir" in str(e.value) and "data_link.txt" not in str(e.value)
    # Past the check (a folder changed after loading), the link is still never copied.
    ws = tmp_path / "ws"
    ws.mkdir()
    prepare_dir(_unchecked(task_dir), ws)
    assert not (ws / "notes.txt").exists() and not (ws / "rootdir").exists()
    assert not (ws / "data_link.txt").is_symlink() and (ws / "data_link.txt").read_text() == "task data\n"


def test_a1b_kernelgym_task_dir_symlink_leak(tmp_path):
    secret = tmp_path / "host_secret.txt"
    secret.write_text("TOP-SECRET-HOST-DATA\n")
    task_dir = _copy_task(tmp_path, DEFAULT_TASKS_ROOT / "triton" / "rmsnorm", "evil-rmsnorm")
    task = load_task(task_dir)
    (task_dir / "notes.txt").symlink_to(secret)
    with pytest.raises(TaskSpecError, match="notes.txt: a symlink to .* outside the task folder"):
        load_task(task_dir)
    assert Path("notes.txt") not in task.public_files()
    ws = create_workspace(Task(task.spec, task_dir), tmp_path / "ws", detect_profile("cpu-interpreter"))
    assert not (ws / "notes.txt").exists()
    with pytest.raises(TaskSpecError, match="outside the task folder"):
        read_task_file(task_dir, "notes.txt")


# -- 5: a FIFO (or a link to a device) in a task folder ---------------------------------------------------------------
def test_a10_task_folder_fifo_hangs_list(tmp_path):
    base = tmp_path / "tasks"
    task_dir = _copy_task(base, name="fifo_task")
    task = _unchecked(task_dir)
    os.mkfifo(task_dir / "helpers.py")
    # `kernelgym list`: the folder is a problem naming the FIFO, and nothing reads it.
    tasks, problems = _finishes(lambda: discover_reference_tasks(base))
    assert tasks == {} and "helpers.py: not a regular file" in problems[0].message
    assert _finishes(lambda: amd_only_features(task, all_profiles()["h200"])) == []
    (task_dir / "helpers.py").unlink()
    (task_dir / "zero.py").symlink_to("/dev/zero")
    with pytest.raises(TaskSpecError, match="zero.py"):
        load_reference_task(task_dir)
    with pytest.raises(TaskSpecError):
        read_task_file(task_dir, "zero.py")


# -- 6: source paths spelled differently from the folder's walk -------------------------------------------------------
@pytest.mark.parametrize("variant", ["./source/silu_and_mul.py", "source//silu_and_mul.py"])
def test_a5_odd_source_path_crashes_grader(variant, tmp_path):
    task_dir = _copy_task(tmp_path)
    cfg = yaml.safe_load((task_dir / "config.yaml").read_text())
    cfg["source_file_path"] = [variant]
    (task_dir / "config.yaml").write_text(yaml.safe_dump(cfg))
    task = load_reference_task(task_dir)
    assert task.spec.source_file_path == ["source/silu_and_mul.py"]
    ws, dest = tmp_path / "ws", tmp_path / "grading"
    ws.mkdir()
    dest.mkdir()
    prepare_dir(task, ws)
    assert prepare_dir(task, dest, ws) == []
    for bad in ("../outside.py", "/etc/passwd", "source/../../x.py", "."):
        cfg["source_file_path"] = [bad]
        (task_dir / "config.yaml").write_text(yaml.safe_dump(cfg))
        with pytest.raises(TaskSpecError, match="source_file_path"):
            load_reference_task(task_dir)


# -- 7: what a candidate leaves in its grading directory --------------------------------------------------------------
FILL = ("python3 -c \"import os; open('fill', 'wb').write(b'x' * (2 << 20)); os.makedirs('locked/sub'); "
        "open('locked/sub/f', 'w').write('x'); os.chmod('locked/sub', 0); os.chmod('locked', 0)\"")


def test_b7_grading_dir_disk_fill(tmp_path, require_bwrap):
    task_dir = tmp_path / "filler"
    task_dir.mkdir()
    (task_dir / "kernel.py").write_text("x = 1\n")
    (task_dir / "config.yaml").write_text(yaml.safe_dump({
        "source_file_path": ["kernel.py"], "compile_command": [FILL], "correctness_command": ["python3 kernel.py"],
        "performance_command": ["python3 kernel.py"], "task_type": "triton2triton"}))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kernel.py").write_text("x = 2\n")
    work = tmp_path / "grading"
    grader = ReferenceGrader(load_reference_task(task_dir), detect_profile("cpu-interpreter"), work,
                             GraderConfig(sandbox="bwrap"), cap_bytes=1 << 20)
    grade = grader.grade(ws)
    assert grade.stages[0].passed and grade.stages[1].passed
    assert "more than the workspace cap" in grade.checks["disk"]
    assert list(work.iterdir()) == []  # removed once graded; the grade keeps the stages' messages


def test_b7_grading_dir_many_empty_files(tmp_path, require_bwrap):
    """Issue 22: empty files take inodes and no bytes; past GraderConfig.grading_dir_cap_files the grade says so."""
    task_dir = tmp_path / "filler"
    task_dir.mkdir()
    (task_dir / "kernel.py").write_text("x = 1\n")
    (task_dir / "config.yaml").write_text(yaml.safe_dump({
        "source_file_path": ["kernel.py"], "compile_command": ["python3 -c \"[open(f'e{i}', 'w') for i in range(60)]\""],
        "correctness_command": ["python3 kernel.py"], "performance_command": ["python3 kernel.py"],
        "task_type": "triton2triton"}))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kernel.py").write_text("x = 2\n")
    grade = ReferenceGrader(load_reference_task(task_dir), detect_profile("cpu-interpreter"), tmp_path / "grading",
                            GraderConfig(sandbox="bwrap", grading_dir_cap_files=40), cap_bytes=1 << 30).grade(ws)
    assert grade.stages[0].passed, grade.stages[0].messages
    assert "more than 40 files and directories" in grade.checks.get("disk", ""), grade.checks
