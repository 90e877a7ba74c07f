"""Attack: run by root, the agent (uid 0 in the sandbox) leaves a setuid-root program in its workspace, or the
candidate in its grading directory, for another user of the host to run.

Defence: `owner_only_run_dirs` (episode and grading directories are created 0700: nothing under them is reachable
by another user, whatever its mode).
Honest twin: none (the owner, the env, reaches everything).
"""


def test_episode_dirs_are_owner_only(env):
    import stat
    env.reset(seed=0)
    assert stat.S_IMODE(env.episode_dir.stat().st_mode) == 0o700
    grading = [d for d in (env.episode_dir / "grading").iterdir() if d.name.startswith("grade-")]
    assert grading and all(stat.S_IMODE(d.stat().st_mode) == 0o700 for d in grading)

