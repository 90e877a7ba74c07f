"""Attack: a shell command plants a symlink to a host file in the workspace, and a file action (which runs in the
trusted env process, not in the sandbox) writes or reads through it; or the link points at /proc/self/cwd, and the
error message would say where it resolves: the env process's own directories on the host.

Defence: `file_action_confinement` (the path is resolved with symlinks followed and must lie inside the workspace;
the final open uses O_NOFOLLOW; the error never names the target).
Honest twin: file actions on the workspace's own files work (tests/test_env.py, test_file_actions_and_json_strings).
"""
import os


def test_symlink_escape_via_file_action_is_refused(env, tmp_path):
    env.reset(seed=0)
    target = tmp_path / "outside.txt"
    env.step({"kind": "shell", "cmd": f"ln -s {target} link.txt"})
    obs, *_ = env.step({"kind": "write_file", "path": "link.txt", "content": "pwned"})
    assert obs["output"].startswith("error:") and not target.exists()
    # The error does not say where a link resolves: through /proc/self it would name the env process's files.
    env.step({"kind": "shell", "cmd": "ln -s /proc/self/cwd here"})
    obs, *_ = env.step({"kind": "read_file", "path": "here/x"})
    assert obs["output"].startswith("error:") and os.path.join(os.getcwd(), "x") not in obs["output"], obs["output"]
