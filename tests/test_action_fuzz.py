"""Property-based tests over the action space and its dict / JSON forms (hypothesis): whatever a policy sends, the
parser either returns an `Action` or raises `ActionError`, and `env.step` returns an observation without raising and
without ending the episode on a malformed action. 2000 parser cases and 1000 env steps per run."""
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernelgym  # noqa: F401 - registers the tasks
from kernelgym.spaces import ACTION_KINDS, Action, ActionError, parse_action

FIELDS = ("kind", "cmd", "path", "content", "old", "new", "config", "truncate")
# Values of every JSON type, odd numbers, control and non-ASCII text, NUL bytes, deep nesting.
scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
                    st.sampled_from(["", "\0", "../../etc/passwd", "/proc/self/mem", "kernel.py", "\udcff", "x" * 5000]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=20)
kinds = st.one_of(st.sampled_from(ACTION_KINDS), st.integers(min_value=-3, max_value=len(ACTION_KINDS) + 3), values)
actions = st.one_of(
    st.fixed_dictionaries({"kind": kinds}, optional={f: values for f in FIELDS[1:]}),
    st.dictionaries(st.sampled_from(FIELDS + ("extra",)), values, max_size=6),
    values,
)


def as_forms(action):
    """The action as a dict and as a JSON string (where JSON can hold it)."""
    yield action
    try:
        yield json.dumps(action)
    except (TypeError, ValueError):
        pass


@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
@given(actions)
def test_parser_returns_an_action_or_raises_action_error(action):
    for form in as_forms(action):
        try:
            parsed = parse_action(form)
        except ActionError as e:
            assert str(e)
            continue
        assert isinstance(parsed, Action) and parsed.kind in ACTION_KINDS
        assert isinstance(parsed.config, int) and parsed.config >= 0 and not math.isnan(parsed.config)


@pytest.fixture(scope="module")
def env(long_episode_env):
    return long_episode_env


def _runs_something_slow(action) -> bool:
    """Actions that parse to a submit (ends the episode, grades), a shell command, a profile or a bench run (each a
    sandboxed process of its own): the fuzz keeps to what the parser and the file actions decide, fast."""
    try:
        parsed = parse_action(action)
    except ActionError:
        return False
    return parsed.kind not in ("read_file", "write_file", "edit_file")


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(actions)
def test_step_never_raises_and_a_malformed_action_does_not_end_the_episode(env, action):
    if _runs_something_slow(action):
        return
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs["output"], str) and reward == 0.0 and not terminated and not truncated
    assert env.observation_space.contains(obs)


class _RaisingEq(str):
    def __eq__(self, other):
        raise RuntimeError("no comparing me")

    __hash__ = str.__hash__


class _LyingInt(int):
    def __lt__(self, other):
        return False


class _RaisingContains(str):
    def __contains__(self, item):
        raise RuntimeError("no searching me")


@pytest.mark.parametrize("action", [
    Action(kind="write_file", path="kernel.py", content=None),
    Action(kind="shell", cmd=None),
    Action(kind="read_file", path=None),
    Action(kind="edit_file", path="kernel.py", old="x", new=None),
    Action(kind="bench", config="0"),
    Action(kind="no_such_kind", path="kernel.py", content="x"),
    {"kind": _RaisingEq("shell"), "cmd": "true"},
    {"kind": "shell", "cmd": _RaisingContains("true")},
    Action(kind="profile", config=_LyingInt(-3)),
], ids=["content-None", "cmd-None", "path-None", "new-None", "config-str", "unknown-kind", "kind-eq-raises",
        "cmd-contains-raises", "config-int-lies"])
def test_an_action_object_or_odd_str_is_checked_like_a_dict_and_loses_nothing(env, action):
    """Found by review: parse_action returned Action objects unchecked (write_file with content=None emptied
    kernel.py, then raised TypeError out of step), and objects whose own methods raise escaped step()."""
    kernel = env.workspace / "kernel.py"
    before = kernel.read_bytes()
    obs, reward, terminated, truncated, info = env.step(action)
    if isinstance(action, Action):  # malformed: an error observation
        assert "error" in obs["output"].lower() or "unknown" in obs["output"], obs["output"]
    else:  # a str subclass is read as the plain string it holds: the command runs
        assert "error" not in obs["output"].lower(), obs["output"]
    assert reward == 0.0 and not terminated and not truncated
    assert kernel.read_bytes() == before


def test_a_command_too_long_for_linux_says_so(env):
    """Found by a new user: a 200 KB command gave `OSError: [Errno 7] Argument list too long: '/usr/bin/bwrap'`."""
    obs, reward, terminated, truncated, info = env.step({"kind": "shell", "cmd": "echo " + "x" * 200_000})
    assert "write a script with write_file" in obs["output"] and not terminated
    obs, *_ = env.step({"kind": "shell", "cmd": "echo " + "y" * 100_000 + " | wc -c"})
    assert "100001" in obs["output"], obs["output"][-300:]


def test_file_text_longer_than_the_action_space_declares_is_refused(env):
    """Issue 22: write_file took content past the Text space's max_length (`MAX_FILE_CHARS`), a file edit_file then
    refused to read back. The check uses the space's own bound: one character more is refused, the episode goes on,
    the file is untouched; exactly the bound is written."""
    from kernelgym.spaces import MAX_FILE_CHARS, action_space
    assert action_space()["content"].max_length == MAX_FILE_CHARS
    kernel = env.workspace / "kernel.py"
    before = kernel.read_bytes()
    obs, reward, terminated, truncated, info = env.step(
        {"kind": "write_file", "path": "kernel.py", "content": "#" * (MAX_FILE_CHARS + 1)})
    assert f"at most {MAX_FILE_CHARS}" in obs["output"] and obs["output"].startswith("error:"), obs["output"]
    assert info["action_error"] and reward == 0.0 and not terminated and not truncated
    assert kernel.read_bytes() == before
    obs, *_ = env.step({"kind": "edit_file", "path": "kernel.py", "old": "import torch",
                        "new": "x" * (MAX_FILE_CHARS + 1)})
    assert "field 'new'" in obs["output"] and kernel.read_bytes() == before
    obs, *_ = env.step({"kind": "write_file", "path": "long.txt", "content": "y" * MAX_FILE_CHARS})
    assert obs["output"] == f"wrote {MAX_FILE_CHARS} characters to long.txt"
    assert (env.workspace / "long.txt").stat().st_size == MAX_FILE_CHARS
