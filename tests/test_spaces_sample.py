"""Issue 27 item 6c: samples of the action space are actions the env takes, and a field a kind does not take is
refused alike for every kind. Before, `env.action_space.sample()` drew every field for every kind, so a sampled bench
(and, since the fix, any kind) carried stray fields and was refused, while a submit with a stray `cmd` was accepted
and ended the episode."""
import re

import numpy as np
import pytest

import kernelgym  # noqa: F401 - registers the tasks
from kernelgym.spaces import ACTION_KINDS, KIND_FIELDS, ActionError, action_space, parse_action

#: A valid action of each kind, and a field it does not take (with a value) to add to it.
VALID = {"shell": {"kind": "shell", "cmd": "true"},
         "write_file": {"kind": "write_file", "path": "notes.txt", "content": "x"},
         "edit_file": {"kind": "edit_file", "path": "kernel.py", "old": "import torch", "new": "import torch"},
         "read_file": {"kind": "read_file", "path": "kernel.py"},
         "submit": {"kind": "submit"}, "profile": {"kind": "profile", "config": 0}, "bench": {"kind": "bench"}}
STRAY = {"shell": ("path", "kernel.py"), "write_file": ("cmd", "ls"), "edit_file": ("config", 1),
         "read_file": ("content", "x"), "submit": ("cmd", "ls"), "profile": ("path", "kernel.py"),
         "bench": ("cmd", "python bench.py")}

#: What a well-formed action may still meet in a workspace: its random path, text or config index fits nothing
#: there. These come from executing the action (env._execute_action, resolve_in_workspace, the OS), not from
#: parse_action, whose refusals (stray, unknown, missing, mistyped fields) say "field" or "action '...'".
CONTENT_ERRORS = re.compile(r"no such file in the workspace|File name too long|resolves outside the workspace|"
                            r"is a directory|not a regular file|cannot open|`old` must occur exactly once|"
                            r"config \d+ does not exist; seen configs are")
SHAPE_ERRORS = re.compile(r"stray field|unknown action|needs a|must be a|takes no fields|malformed action")


@pytest.mark.parametrize("kind", ACTION_KINDS)
def test_a_stray_field_is_refused_for_every_kind_naming_it_and_the_kinds_fields(kind):
    assert parse_action(VALID[kind]).kind == kind
    name, value = STRAY[kind]
    with pytest.raises(ActionError) as e:
        parse_action({**VALID[kind], name: value})
    message = str(e.value)
    assert f"stray field(s) {name!r}" in message and f"action {kind!r}" in message, message
    for allowed in KIND_FIELDS[kind]:
        assert repr(allowed) in message, message
    # left at its default, the same field is no stray: a space sample (every key present) must parse
    assert parse_action({**VALID[kind], name: "" if isinstance(value, str) else 0}).kind == kind


def test_a_true_truncate_is_a_stray_field_except_on_a_submit():
    assert parse_action({"kind": "submit", "truncate": True}).truncate
    with pytest.raises(ActionError, match=r"action 'shell' takes only the field\(s\) 'kind', 'cmd'; got stray "
                                          r"field\(s\) 'truncate'"):
        parse_action({"kind": "shell", "cmd": "ls", "truncate": True})


def test_samples_are_in_the_space_and_parse_and_keep_to_their_kinds_fields():
    space = action_space()
    space.seed(7)
    kinds = set()
    for _ in range(300):
        sample = space.sample()
        assert space.contains(sample)
        action = parse_action(sample)  # raises ActionError for a sample of the wrong shape
        kinds.add(action.kind)
        for name in ("cmd", "path", "content", "old", "new", "config"):
            if name not in KIND_FIELDS[action.kind]:
                assert not sample[name], (action.kind, name)
    assert kinds == set(ACTION_KINDS)


def test_a_mask_picks_the_kinds_sampled():
    space = action_space()
    space.seed(3)
    mask = {name: None for name in space.spaces}
    mask["kind"] = np.array([k in ("read_file", "bench") for k in ACTION_KINDS], dtype=np.int8)
    assert {parse_action(space.sample(mask=mask)).kind for _ in range(50)} == {"read_file", "bench"}


@pytest.fixture(scope="module")
def env(long_episode_env):
    return long_episode_env


def test_a_submit_with_a_stray_cmd_is_an_error_observation_and_the_episode_goes_on(env):
    obs, reward, terminated, truncated, info = env.step({"kind": "submit", "cmd": "ls"})
    assert obs["output"].startswith("error: action 'submit' takes only the field(s) 'kind', 'truncate'; got stray "
                                    "field(s) 'cmd'"), obs["output"]
    assert info["action_error"] and reward == 0.0 and not terminated and not truncated
    obs, *_ = env.step({"kind": "shell", "cmd": "echo still-alive"})
    assert "still-alive" in obs["output"]


def test_200_sampled_actions_step_without_an_error_about_their_shape(env):
    """200 samples are drawn and each is parsed directly (parse_action raises for a malformed one). Every sample of a
    kind with random fields (shell, the file kinds, profile) is stepped; a sampled bench or submit has no random
    field (each is its kind with every other field at its default), so its first sample is stepped and the later
    ones are checked to be the same action (each bench is a 1-2 s sandboxed run, each submit a grading). A stepped
    sample's error, if any, must be one of executing it (CONTENT_ERRORS), never one of parse_action's refusals
    (SHAPE_ERRORS)."""
    env.reset(seed=1)
    env.action_space.seed(11)
    content_errors, stepped, first = 0, 0, {}
    for i in range(200):
        sample = env.action_space.sample()
        action = parse_action(sample)
        if action.kind in ("bench", "submit"):
            if action.kind in first:
                assert action == first[action.kind], (i, sample)
                continue
            first[action.kind] = action
        obs, reward, terminated, truncated, info = env.step(sample)
        stepped += 1
        error = info["action_error"]
        if error:
            assert CONTENT_ERRORS.search(error) and not SHAPE_ERRORS.search(error), (i, action.kind, error[:300])
            content_errors += 1
        assert env.observation_space.contains(obs)
        assert (terminated or truncated) == (action.kind == "submit"), (i, action.kind, obs["output"][-300:])
        if action.kind == "submit":
            assert info["grade"]["compiled"] is True  # graded as a submit: the sampled actions left kernel.py alone
            env.reset(seed=i)
    assert set(first) == {"bench", "submit"} and stepped > 100
    assert content_errors < stepped  # shell, bench and submit samples run without an action error


def test_a_vector_envs_sampled_batch_is_well_formed_per_env():
    from gymnasium.vector.utils import batch_space, iterate

    from kernelgym.spaces import BatchedActionSpace, action_space, parse_action
    batched = batch_space(action_space(), 4)
    assert isinstance(batched, BatchedActionSpace)
    batched.seed(0)
    first = batched.sample()
    batched.seed(0)
    assert batched.sample()["kind"].tolist() == first["kind"].tolist()  # seeded draws repeat
    for _ in range(25):
        batch = batched.sample()
        assert batched.contains(batch) and len(batch["kind"]) == 4
        for action in iterate(batched, batch):
            parse_action(action)  # raises ActionError for a stray or missing field


def test_make_vec_gives_the_batched_action_space(tmp_path, monkeypatch):
    import gymnasium as gym

    from kernelgym.spaces import BatchedActionSpace
    monkeypatch.chdir(tmp_path)
    envs = gym.make_vec("KernelArena/triton-rmsnorm-v0", num_envs=2, vectorization_mode="sync")
    try:
        assert isinstance(envs.action_space, BatchedActionSpace)
    finally:
        envs.close()
