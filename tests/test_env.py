"""KernelArenaEnv: Gymnasium API, check_env, malformed actions, budgets. Attacks through file actions (symlinks,
FIFOs, huge files) and on the run directory are in tests/attacks/ (kernelgym/grader/defences.py lists them)."""
import json

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import kernelgym  # noqa: F401 - registers the tasks
from kernelgym.env import KernelArenaEnv


def test_registered_with_string_entry_point():
    spec = gym.spec("KernelArena/triton-rmsnorm-v0")
    assert spec.entry_point == "kernelgym.env:KernelArenaEnv" and spec.nondeterministic is True


def test_gym_make_reset_prompt(tmp_path, require_bwrap):
    env = gym.make("KernelArena/triton-rmsnorm-v0", run_dir=tmp_path, hardware="cpu-interpreter")
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    prompt = obs["prompt"]
    for part in ("kernel.py", "rmsnorm_kernel", "submit", "Completion rules", "Triton CPU interpreter",
                 str(env.unwrapped.workspace)):
        assert part in prompt, part
    assert info["grade"] == {} and obs["output"] == ""


def test_check_env_passes(tmp_path, require_bwrap):
    # Through gym.make so the spec (nondeterministic=True: GPU timings vary) is attached, as users get it.
    env = gym.make("KernelArena/triton-rmsnorm-v0", run_dir=tmp_path, hardware="cpu-interpreter",
                   render_mode="ansi").unwrapped
    check_env(env, skip_render_check=False)


@pytest.mark.parametrize("action", [None, 42, "{", "[]", {"kind": "nope"}, {"kind": 99}, {"kind": "shell"},
                                    {"kind": "shell", "cmd": 5}, {"kind": "read_file", "path": "missing.py"},
                                    {"kind": "edit_file", "path": "kernel.py", "old": "tl.", "new": "x"},
                                    {"kind": "write_file", "path": "../../escape.txt", "content": "x"},
                                    {"kind": "read_file", "path": "/etc/passwd"},
                                    {"kind": "shell", "cmd": "echo a\0b"}, {"kind": "read_file", "path": "k\0.py"}])
def test_malformed_action_gives_error_observation(env, action):
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs["output"].startswith("error:") and info["action_error"]
    assert reward == 0.0 and not terminated and not truncated
    obs, *_ = env.step({"kind": "shell", "cmd": "echo still-alive"})
    assert "still-alive" in obs["output"]


def test_file_actions_and_json_strings(env):
    env.reset(seed=0)
    obs, *_ = env.step(json.dumps({"kind": "write_file", "path": "notes/a.txt", "content": "hello"}))
    assert "wrote 5" in obs["output"]
    obs, *_ = env.step({"kind": "edit_file", "path": "notes/a.txt", "old": "hello", "new": "bye"})
    assert "edited" in obs["output"]
    obs, *_ = env.step({"kind": "read_file", "path": "notes/a.txt"})
    assert obs["output"] == "bye"
    obs, *_ = env.step({"kind": "shell", "cmd": "cat notes/a.txt"})
    assert obs["output"].startswith("bye")


def test_submit_terminates_with_arena_score(env):
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step({"kind": "submit"})
    assert terminated and not truncated and reward == 120.0
    g = info["grade"]
    assert [s["name"] for s in g["stages"]] == ["compile", "correctness", "performance"]
    assert g["correct"] and len(g["configs"]) == 3 and "score 120.0" in obs["output"]
    obs, reward, terminated, *_ = env.step({"kind": "shell", "cmd": "ls"})
    assert "episode is over" in obs["output"] and reward == 0.0


def test_step_budget_truncates_and_grades(tmp_path, require_bwrap):
    env = KernelArenaEnv("triton-rmsnorm", run_dir=tmp_path, hardware="cpu-interpreter", max_steps=2)
    env.reset(seed=0)
    _, r1, te1, tr1, _ = env.step({"kind": "write_file", "path": "kernel.py", "content": "syntax error("})
    assert (r1, te1, tr1) == (0.0, False, False)
    _, r2, te2, tr2, info = env.step({"kind": "shell", "cmd": "true"})
    assert tr2 and not te2 and r2 == 0.0 and info["grade"]["compiled"] is False


def test_episodes_get_fresh_workspaces(env):
    env.reset(seed=0)
    first = env.workspace
    env.step({"kind": "write_file", "path": "kernel.py", "content": "broken"})
    env.reset(seed=1)
    assert env.workspace != first and "triton.jit" in (env.workspace / "kernel.py").read_text()


def test_render_ansi(tmp_path, require_bwrap):
    env = KernelArenaEnv(run_dir=tmp_path, hardware="cpu-interpreter", render_mode="ansi")
    env.reset(seed=0)
    env.step({"kind": "shell", "cmd": "echo rendered"})
    assert "rendered" in env.render()


def test_grader_follows_env_sandbox_choice(tmp_path):
    from kernelgym.grader import GraderConfig
    with pytest.warns(UserWarning):
        e = KernelArenaEnv(run_dir=tmp_path, hardware="cpu-interpreter", sandbox="none", grader=GraderConfig(reps=5))
    assert e.grader_config.sandbox == "none" and e.grader_config.reps == 5

def test_a_workspace_over_its_cap_says_so_in_the_observation(tmp_path, require_bwrap):
    """Issue 16: a step that fills the workspace past its cap ends with a clear error note; removing the files
    clears it."""
    import gymnasium as gym
    env = gym.make("KernelArena/triton-rmsnorm-v0", run_dir=tmp_path, workspace_cap_bytes=1 << 20).unwrapped
    env.reset(seed=0)
    try:
        obs, *_ = env.step({"kind": "shell", "cmd": "head -c 3000000 /dev/urandom > big.bin; echo wrote"})
        assert "wrote" in obs["output"] and "more than its cap of 1.0 MiB" in obs["output"], obs["output"]
        obs, *_ = env.step({"kind": "shell", "cmd": "rm big.bin; echo removed"})
        assert "removed" in obs["output"] and "cap" not in obs["output"]
        obs, *_ = env.step({"kind": "shell", "cmd": "truncate -s 10G sparse.bin; echo sparse"})
        assert "cap" not in obs["output"]  # a sparse file counts the blocks it uses
    finally:
        env.close()


@pytest.mark.parametrize("action, missing", [({"kind": "write_file", "path": "kernel.py"}, "content"),
                                             ({"kind": "edit_file", "path": "kernel.py", "old": "import"}, "new")])
def test_a_left_out_field_is_an_error_not_an_empty_one(action, missing):
    # A dict that leaves out content/new is a mistake: it must not empty the file or delete the old text.
    from kernelgym.spaces import ActionError, parse_action
    with pytest.raises(ActionError, match=f"needs a '{missing}' field"):
        parse_action(action)
    assert parse_action({**action, missing: ""}).kind == action["kind"]  # given empty: a deliberate empty value


def test_an_unknown_field_is_an_error_not_ignored():
    from kernelgym.spaces import ActionError, parse_action
    with pytest.raises(ActionError, match=r"unknown action field\(s\) 'contents'"):
        parse_action({"kind": "write_file", "path": "kernel.py", "contents": "x"})
