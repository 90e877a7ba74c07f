"""Attack: a command writes outside its workspace: into the host's /etc, and into the directory above the
workspace (the run directory, where other episodes and the grader's files live).

Defence: `read_only_system` (every system path is a read-only bind; only the workspace is bound writable).
Honest twin: the write into the workspace itself succeeds.
"""


def test_writes_outside_workspace_fail(box, tmp_path):
    r = box.run(f"echo hi > {box.workspace}/ok.txt; echo x > /etc/kernelgym-test; echo y > {tmp_path}/escape.txt")
    assert (box.workspace / "ok.txt").read_text() == "hi\n"
    assert not (tmp_path / "escape.txt").exists()
    assert "Read-only file system" in r.output or "No such file" in r.output
