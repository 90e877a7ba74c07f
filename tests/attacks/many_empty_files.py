"""Attack: spend the host's inodes with empty files, which the byte caps barely see. An empty file takes an inode and
no block; only its name costs its directory's blocks. A review made about 300,000 empty files in one shell step: the
workspace cap counted 6 MiB and said nothing, and a filesystem out of inodes takes no new file from anyone. The
candidate's process can do the same in its grading directory while graded.

Defences: `workspace_file_cap`: after every step the env counts the workspace's entries (files, directories, links;
none followed) in the same walk as its bytes (`tree_usage`), and a step that leaves more than `workspace_cap_files`
(100,000) gets an error note in its observation, as the byte cap does. `grading_dir_file_cap`: once the harness is
done the grader counts the grading directory's entries in the walk that counts its bytes; past
`GraderConfig.grading_dir_cap_files` (100,000) the grade fails correctness and says why. Both are checks after the
fact, not quotas. Shown with small caps (3000 files here, not 300,000: the test stays fast).
Honest twins: a shell step that makes a few hundred files (a build tree) gets no note; the baseline's grade reports
the few entries its grading directory holds and scores 120.
"""
import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig
from kernelgym.grader.files import tree_bytes, tree_usage

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()
EMPTY_FILES = BASELINE.replace("import torch\n", '''import torch
for _i in range(3000):  # 3000 here; hundreds of thousands in an attack
    open(f"empty-{_i}", "w").close()
''', 1)


def test_tree_usage_counts_entries_in_the_walk_that_counts_bytes_and_follows_no_link(tmp_path):
    (tmp_path / "d").mkdir()
    for i in range(50):
        (tmp_path / "d" / f"e{i}").touch()
    (tmp_path / "link").symlink_to("/usr")  # followed, it would count a whole system tree
    used = tree_usage(tmp_path, 1 << 40, 1 << 40)
    assert used.entries == 52  # d, its 50 files, the link itself
    assert used.bytes == tree_bytes(tmp_path, 1 << 40)
    stopped = tree_usage(tmp_path, 1 << 40, 10)
    assert 10 < stopped.entries < 52  # one directory of many entries stops once past the cap, not at its end


@pytest.mark.timeout(120)
def test_a_shell_step_making_many_empty_files_gets_the_file_cap_note(tmp_path, require_bwrap):
    from kernelgym.env import KernelArenaEnv
    env = KernelArenaEnv("triton-rmsnorm", run_dir=tmp_path / "run", hardware="cpu-interpreter",
                         workspace_cap_files=2000, grader=GraderConfig(warm_worker=False))
    env.reset(seed=0)
    try:
        obs, *_ = env.step({"kind": "shell", "cmd": "mkdir many && cd many && seq 1 3000 | xargs touch && echo made"})
        assert "made" in obs["output"], obs["output"]
        assert "files and directories, more than its cap of 2000" in obs["output"], obs["output"]
        assert "MiB, more than its cap" not in obs["output"]  # the byte cap (4 GiB) sees nothing wrong
        obs, *_ = env.step({"kind": "shell", "cmd": "rm -r many && echo removed"})
        assert "removed" in obs["output"] and "more than its cap" not in obs["output"], obs["output"]
    finally:
        env.close()


@pytest.mark.timeout(120)
def test_honest_twin_a_build_tree_of_a_few_hundred_files_gets_no_note(tmp_path, require_bwrap):
    from kernelgym.env import DEFAULT_WORKSPACE_CAP_FILES, KernelArenaEnv
    env = KernelArenaEnv("triton-rmsnorm", run_dir=tmp_path / "run", hardware="cpu-interpreter",
                         grader=GraderConfig(warm_worker=False))
    env.reset(seed=0)
    try:
        assert env.workspace_cap_files == DEFAULT_WORKSPACE_CAP_FILES == 100_000
        obs, *_ = env.step({"kind": "shell", "cmd": "mkdir -p build/obj && cd build/obj && seq 1 300 | xargs touch "
                                                    "&& echo built"})
        assert "built" in obs["output"] and "error" not in obs["output"], obs["output"]
        assert 300 < tree_usage(env.workspace, 1 << 40).entries < 2000
    finally:
        env.close()


@pytest.mark.timeout(300)
def test_a_grading_directory_holding_more_files_than_its_cap_fails_the_grade(grade):
    g = grade(EMPTY_FILES, config=GraderConfig(static_check=False, grading_dir_cap_files=1000))
    assert g.compiled and not g.correct and g.score == 20.0, g.summary()
    assert g.checks["disk"].startswith("failed") and "more than 1000 files" in g.checks["disk"], g.checks
    assert any("grading_dir_cap_files" in m for m in g.stages[1].messages), g.stages[1].messages


@pytest.mark.timeout(300)
def test_honest_twin_reports_how_many_entries_its_grading_directory_holds(grade):
    g = grade(BASELINE, config=GraderConfig(grading_dir_cap_files=1000))
    assert g.score == 120.0, g.summary()
    count = int(g.checks["disk"].split(" files and directories")[0])
    assert 0 < count <= 1000 and g.checks["disk"].endswith("MiB in the grading directory"), g.checks
