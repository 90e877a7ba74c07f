"""Attack: fill the host's disk past the workspace's checked cap with directories. `env.workspace_bytes` adds the
blocks of every non-directory entry and only descends into directories, never counting their own blocks: each
empty directory takes a block (4 KiB on ext4), and a directory listing many long names takes many more. A command
making directories (or a million long-named empty files, whose names live in the directory's blocks) spends the
host's disk and inodes with no cap note, step after step. The reference grader's grading-directory check
(`ReferenceGrader.grade`, checks['disk']) uses the same walk.

Defence: `directories_count_against_cap`: directories (the root included) count their own st_blocks, as files do.
"""
import pytest


@pytest.mark.timeout(120)
def test_directories_count_against_the_workspace_cap(tmp_path, require_bwrap):
    from kernelgym.env import KernelArenaEnv, workspace_bytes
    from kernelgym.grader import GraderConfig
    (tmp_path / "probe").mkdir()
    if (tmp_path / "probe").lstat().st_blocks == 0:
        pytest.skip("this filesystem gives directories no blocks (tmpfs): nothing uncounted to show")
    env = KernelArenaEnv("triton-rmsnorm", run_dir=tmp_path / "run", hardware="cpu-interpreter",
                         workspace_cap_bytes=4 << 20, grader=GraderConfig(warm_worker=False))
    env.reset(seed=0)
    try:
        # 3000 directories: 12 MiB on ext4, three times the 4 MiB cap; plus one directory of long-named empty files.
        cmd = ("mkdir d && cd d && seq -w 1 3000 | xargs mkdir && cd .. && mkdir n && cd n && "
               "seq -w 1 3000 | sed 's/^/" + "x" * 200 + "/' | xargs touch && cd .. && du -sk . && echo made")
        obs, *_ = env.step({"kind": "shell", "cmd": cmd})
        assert "made" in obs["output"], obs["output"]
        used = workspace_bytes(env.workspace, 1 << 40)
        assert used > 4 << 20, f"counted {used} bytes; du says: {obs['output'][-200:]}"
        assert "more than its cap" in obs["output"], obs["output"]
    finally:
        env.close()
