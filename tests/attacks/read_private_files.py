"""Attack: code in the sandbox reads private data: another episode's workspace, the task directories (the pristine
reference, task.yaml), the home directory's files; or the candidate kernel, at import, opens the task's task.yaml.

Defence: `mount_allowlist` (the sandbox mounts an allowlist: system directories, this Python, the workspace;
nothing else of the host exists inside). The private store of unseen configs is checked the same way in
tests/test_unseen.py (test_private_store_is_outside_and_invisible_to_the_sandbox).
Honest twin: the workspace's own files are readable (every command that runs check.py).
"""
from kernelgym.discovery import get_task

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()


def test_private_and_other_episodes_invisible(box, tmp_path):
    other = tmp_path / "run" / "episodes" / "ep2" / "workspace"
    other.mkdir(parents=True)
    (other / "secret.txt").write_text("other episode")
    from kernelgym.task import DEFAULT_TASKS_ROOT
    r = box.run(f"cat {other}/secret.txt; ls {DEFAULT_TASKS_ROOT}; cat ~/.bash_history /root/.bashrc")
    assert "other episode" not in r.output
    assert "rmsnorm" not in r.output and "triton" not in r.output


def test_kernel_cannot_read_task_dir(grade):
    src = BASELINE + f"\nopen({str(TASK.root / 'task.yaml')!r}).read()\n"
    g = grade(src)
    assert g.score == 0.0 and ("No such file" in g.stages[0].messages[0] or "FileNotFound" in g.stages[0].messages[0])
