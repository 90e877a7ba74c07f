"""Action and observation spaces, and parsing of actions given as dicts, JSON strings or space samples.

Action: ``{"kind": Discrete(7), "cmd", "path", "content", "old", "new": Text, "config": Discrete(64)}``;
`kind` indexes `ACTION_KINDS`; `config` is the seen config a ``profile`` action profiles. ``{"kind": "bench"}``
runs ``python bench.py`` (advisory: what the grader would reward, docs/BENCH.md). step() also accepts
``{"kind": "shell", "cmd": "ls"}`` and its JSON string. Each kind takes its own fields (`KIND_FIELDS`); another field
given a value (a submit with a ``cmd``) is refused with an error observation naming it and the kind's fields; left
at its default ("", 0, false) it may be present, as in a sample of the space. `action_space().sample()` gives such
well-formed actions (`ActionSpace`).
A dict or JSON submit may carry ``"truncate": true``: the policy stopped without submitting (an agent CLI that
exited or timed out), so the episode ends truncated rather than terminated; the kernel is graded either way.

Observation: ``{"output": Text, "prompt": Text}``: the last action's output, and the task prompt
(at reset; empty afterwards). Text charset: tab, newline, carriage return, printable ASCII and
U+00A0-U+2FFF, which covers compiler and profiler output; other characters become '?'.
"""
from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

ACTION_KINDS = ("shell", "write_file", "edit_file", "read_file", "submit", "profile", "bench")
MAX_CONFIGS = 64
CHARSET = "".join(["\t\n\r", *map(chr, range(32, 127)), *map(chr, range(0xA0, 0x3000))])
_CHARSET_SET = frozenset(CHARSET)
MAX_OBS_CHARS = 100_000
MAX_CMD_CHARS = 16_384
MAX_FILE_CHARS = 200_000


def _text(max_length: int) -> spaces.Text:
    return spaces.Text(max_length=max_length, min_length=0, charset=CHARSET)


#: The fields each kind takes besides ``kind``; any other field must keep its default ("" for text, 0 for config,
#: false for truncate), else the action is refused (`parse_action`).
KIND_FIELDS = {"shell": ("cmd",), "write_file": ("path", "content"), "edit_file": ("path", "old", "new"),
               "read_file": ("path",), "submit": ("truncate",), "profile": ("config",), "bench": ()}
#: The fields of `KIND_FIELDS` that must be non-empty.
_REQUIRED = {"shell": ("cmd",), "write_file": ("path",), "edit_file": ("path", "old"), "read_file": ("path",)}


class ActionSpace(spaces.Dict):
    """The env's action space: a gymnasium Dict of every field, whose `sample` gives actions `parse_action` accepts.

    A plain Dict sample draws every field for every kind, so nearly every sample carried fields its kind does not
    take (a bench with a ``cmd``) and was refused. Here a sample keeps only its kind's fields (`KIND_FIELDS`), the
    others at their defaults, and a field the kind needs is never empty. Whether it then does anything useful is
    the workspace's business: a random path names no file (``no such file in the workspace``, ``File name too
    long``), a random ``old`` does not occur, a random ``config`` may be past the task's seen configs (``config N
    does not exist``), a random command is not found. Such samples get the env's error observation, like any
    well-formed action that fails; the episode goes on (a sampled submit ends it).
    """

    def sample(self, mask: dict[str, Any] | None = None, probability: dict[str, Any] | None = None) -> dict[str, Any]:
        """A random action of a random kind: every key of the space, those its kind does not take at their
        defaults. `mask` or `probability` is per field, as gymnasium's Dict takes it (a `kind` mask picks the kinds
        drawn). Only the kind's own fields are drawn: a 200,000-character Text draw takes a tenth of a second.

        Raises:
            ValueError: both `mask` and `probability` are given.
        """
        if mask is not None and probability is not None:
            raise ValueError("give a mask or a probability, not both")

        def draw(name: str) -> Any:
            space = self.spaces[name]
            if mask is not None:
                return space.sample(mask=mask.get(name))
            if probability is not None:
                return space.sample(probability=probability.get(name))
            return space.sample()

        kind_index = draw("kind")
        kind = ACTION_KINDS[int(kind_index)]
        drawn: dict[str, Any] = {}
        for name, space in self.spaces.items():
            if name == "kind":
                drawn[name] = kind_index
            elif name not in KIND_FIELDS[kind]:
                drawn[name] = np.int64(0) if isinstance(space, spaces.Discrete) else ""
            else:
                drawn[name] = draw(name)
                for _ in range(100):  # Text draws its length uniformly from 0..max: an empty draw is rare
                    if drawn[name] or name not in _REQUIRED.get(kind, ()):
                        break
                    drawn[name] = draw(name)
        return drawn


class BatchedActionSpace(spaces.Dict):
    """A vector env's action space: Gymnasium's batched form of `ActionSpace` (a Dict with every key, each a batch
    of `num_envs`), whose `sample` is `num_envs` samples of `ActionSpace`, each well formed, batched. Gymnasium's own
    batched Dict samples every field of every env, so nearly each env's action would carry fields its kind does not
    take and be refused. `gymnasium.vector.utils.batch_space` makes this one for an `ActionSpace`."""

    def __init__(self, single: ActionSpace, num_envs: int, seed: int | np.random.Generator | None = None):
        batched = batch_space.dispatch(spaces.Dict)(single, num_envs)
        super().__init__(batched.spaces, seed=seed)
        self.single, self.num_envs = single, num_envs

    def seed(self, seed: int | None = None):
        """Seed the batched fields and the per-env draws (`sample`) alike."""
        seeds = super().seed(seed)
        self.single.seed(int(self.np_random.integers(2**31)))
        return seeds

    def sample(self, mask: dict[str, Any] | None = None, probability: dict[str, Any] | None = None) -> dict[str, Any]:
        """`num_envs` well-formed actions (`ActionSpace.sample`, with the same `mask` or `probability` each), in
        the batched form a vector env's `step` takes."""
        actions = [self.single.sample(mask=mask, probability=probability) for _ in range(self.num_envs)]
        return concatenate(self.single, actions, create_empty_array(self.single, self.num_envs))


@batch_space.register(ActionSpace)
def _batch_action_space(space: ActionSpace, n: int = 1) -> BatchedActionSpace:
    return BatchedActionSpace(copy.deepcopy(space), n, seed=copy.deepcopy(space.np_random))


def action_space() -> ActionSpace:
    """The env's action space (see the module docstring); its `ActionSpace.sample` gives well-formed actions."""
    return ActionSpace({"kind": spaces.Discrete(len(ACTION_KINDS)), "cmd": _text(MAX_CMD_CHARS),
                        "path": _text(4096), "content": _text(MAX_FILE_CHARS), "old": _text(MAX_FILE_CHARS),
                        "new": _text(MAX_FILE_CHARS), "config": spaces.Discrete(MAX_CONFIGS)})


def observation_space() -> spaces.Dict:
    """The env's observation space: ``{"output": Text, "prompt": Text}``."""
    return spaces.Dict({"output": _text(MAX_OBS_CHARS), "prompt": _text(MAX_OBS_CHARS)})


def to_observation_text(text: str, max_chars: int = MAX_OBS_CHARS) -> str:
    """`text` made to fit the observation space: unknown characters become '?', long text is cut
    (head and tail kept, with a note of what was cut)."""
    text = "".join(c if c in _CHARSET_SET else "?" for c in text)
    if len(text) > max_chars:
        note = f"\n[... {len(text) - max_chars + 200} characters cut ...]\n"
        half = (max_chars - len(note)) // 2
        text = text[:half] + note + text[-half:]
    return text


#: Linux's limit on one argument of a new program (MAX_ARG_STRLEN, 32 pages): the shell gets the command as one.
MAX_CMD_BYTES = 131072


#: Every field an action may carry (which ones matter depends on its kind).
_FIELDS = ("kind", "cmd", "path", "content", "old", "new", "config", "truncate")


class ActionError(ValueError):
    """The action is malformed; its message becomes the observation."""


@dataclass
class Action:
    """A parsed action. Which fields matter depends on `kind` (see `ACTION_KINDS`)."""

    kind: str
    cmd: str = ""
    path: str = ""
    content: str = ""
    old: str = ""
    new: str = ""
    config: int = 0
    truncate: bool = False
    """Only with kind submit: end the episode truncated (the policy stopped) instead of terminated."""


def parse_action(action: Any) -> Action:
    """Turn a dict, JSON string, space sample or `Action` into a checked `Action`.

    Raises:
        ActionError: not a dict or JSON object, unknown kind, wrong field types, a required field missing, or a
            content, old or new field longer than the action space declares (`MAX_FILE_CHARS` characters); also
            for any other error the action's own objects raise while checked (a key whose ``__eq__`` raises).
    """
    try:
        return _parse_action(action)
    except ActionError:
        raise
    except Exception as e:  # noqa: BLE001 - whatever the action's objects raise, it is the action's fault
        raise ActionError(f"malformed action ({type(e).__name__} while reading it)") from None


def _parse_action(action: Any) -> Action:
    if isinstance(action, Action):  # checked like a dict: an Action made by hand may hold anything
        action = {f.name: getattr(action, f.name) for f in dataclasses.fields(Action)}
    if isinstance(action, (str, bytes)):
        try:
            action = json.loads(action)
        except RecursionError:
            raise ActionError("action JSON is nested too deeply") from None
        except ValueError as e:
            raise ActionError(f"action is not valid JSON ({e}); expected e.g. "
                              '{"kind": "shell", "cmd": "python check.py"}') from None
    if not isinstance(action, dict):
        raise ActionError(f"action must be a dict or a JSON object, got {type(action).__name__}")
    kind = action.get("kind")
    if isinstance(kind, (int, np.integer)) and not isinstance(kind, bool):
        if not 0 <= int(kind) < len(ACTION_KINDS):
            raise ActionError(f"action kind index {kind} out of range 0..{len(ACTION_KINDS) - 1}")
        kind = ACTION_KINDS[int(kind)]
    if not isinstance(kind, str) or str.__str__(kind) not in ACTION_KINDS:
        raise ActionError(f"unknown action kind {kind!r}; expected one of {', '.join(ACTION_KINDS)}")
    kind = str.__str__(kind)
    unknown = [k for k in action if not (isinstance(k, str) and str.__str__(k) in _FIELDS)]
    if unknown:  # a misspelt field (`"contents"`) would otherwise be read as left out
        raise ActionError(f"unknown action field(s) {', '.join(repr(k) for k in unknown[:5])}; the fields are "
                          f"{', '.join(_FIELDS)}")
    fields = {}
    for name in ("cmd", "path", "content", "old", "new"):
        value = action.get(name, "")
        if not isinstance(value, str):
            raise ActionError(f"field {name!r} must be a string, got {type(value).__name__}")
        value = str.__str__(value)  # a plain str: a subclass could answer `in` or `==` as it likes
        if name in ("cmd", "path") and "\0" in value:  # no command line or file name can hold one
            raise ActionError(f"field {name!r} contains a NUL byte")
        # The same bound the action space's Text declares for these fields (`action_space`): text past it could
        # never be a sample of the space, and edit_file could not read the file it makes back.
        if name in ("content", "old", "new") and len(value) > MAX_FILE_CHARS:
            raise ActionError(f"field {name!r} is {len(value)} characters; the action space takes at most "
                              f"{MAX_FILE_CHARS} (kernelgym.spaces.MAX_FILE_CHARS): write a longer file in parts "
                              f"with a shell command")
        if name == "cmd" and len(value.encode(errors="surrogateescape")) >= MAX_CMD_BYTES:
            raise ActionError(f"field 'cmd' is {len(value.encode(errors='surrogateescape'))} bytes; Linux takes at "
                              f"most {MAX_CMD_BYTES - 1} in one argument: write a script with write_file and run it")
        fields[name] = value
    config = action.get("config", 0)
    if isinstance(config, bool) or not isinstance(config, (int, np.integer)):
        raise ActionError(f"field 'config' must be a non-negative integer (a seen config's index), got {config!r}")
    config = int.__int__(config) if isinstance(config, int) else int(config)  # an int subclass's value, not its say
    if config < 0:
        raise ActionError(f"field 'config' must be a non-negative integer (a seen config's index), got {config!r}")
    fields["config"] = config
    truncate = action.get("truncate", False)
    if not isinstance(truncate, (bool, np.bool_)):  # true on another kind than submit: a stray field (below)
        raise ActionError(f"field 'truncate' must be a boolean, and true only on a submit; got {truncate!r}")
    fields["truncate"] = bool(truncate)
    # A field the kind does not take, given a value, is refused for every kind alike: a submit with a `cmd` or a
    # read_file with `content` is a policy's mistake (the field would be ignored), not something to run around.
    stray = [n for n in _FIELDS[1:] if n not in KIND_FIELDS[kind] and fields[n]]
    if stray:
        takes = (f"only the field(s) {', '.join(repr(n) for n in ('kind', *KIND_FIELDS[kind]))}" if KIND_FIELDS[kind]
                 else "no fields besides 'kind' (it runs `python bench.py` on every seen config)")
        raise ActionError(f"action {kind!r} takes {takes}; got stray field(s) "
                          f"{', '.join(repr(n) for n in stray)}: leave them out")
    for name in _REQUIRED.get(kind, ()):
        if not fields[name]:
            raise ActionError(f"action {kind!r} needs a non-empty {name!r} field")
    # May be empty, but must be given: a dict that leaves them out means a mistake, not an empty file or a deletion.
    for name in {"write_file": ["content"], "edit_file": ["new"]}.get(kind, []):
        if name not in action:
            raise ActionError(f"action {kind!r} needs a {name!r} field (\"\" to {'write an empty file' if name == 'content' else 'delete the old text'})")
    return Action(kind=kind, **fields)
