"""Action and observation spaces, and parsing of actions given as dicts, JSON strings or space samples.

Action: ``{"kind": Discrete(7), "cmd", "path", "content", "old", "new": Text, "config": Discrete(64)}``;
`kind` indexes `ACTION_KINDS`; `config` is the seen config a ``profile`` action profiles. ``{"kind": "bench"}``
runs ``python bench.py`` (advisory: what the grader would reward, docs/BENCH.md) and takes no other field. step() also accepts ``{"kind": "shell", "cmd": "ls"}`` and its JSON string.
A dict or JSON submit may carry ``"truncate": true``: the policy stopped without submitting (an agent CLI that
exited or timed out), so the episode ends truncated rather than terminated; the kernel is graded either way.

Observation: ``{"output": Text, "prompt": Text}``: the last action's output, and the task prompt
(at reset; empty afterwards). Text charset: tab, newline, carriage return, printable ASCII and
U+00A0-U+2FFF, which covers compiler and profiler output; other characters become '?'.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

ACTION_KINDS = ("shell", "write_file", "edit_file", "read_file", "submit", "profile", "bench")
MAX_CONFIGS = 64
CHARSET = "".join(["\t\n\r", *map(chr, range(32, 127)), *map(chr, range(0xA0, 0x3000))])
_CHARSET_SET = frozenset(CHARSET)
MAX_OBS_CHARS = 100_000
MAX_CMD_CHARS = 16_384
MAX_FILE_CHARS = 200_000


def _text(max_length: int) -> spaces.Text:
    return spaces.Text(max_length=max_length, min_length=0, charset=CHARSET)


def action_space() -> spaces.Dict:
    """The env's action space (see the module docstring)."""
    return spaces.Dict({"kind": spaces.Discrete(len(ACTION_KINDS)), "cmd": _text(MAX_CMD_CHARS),
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
    if not isinstance(truncate, (bool, np.bool_)) or (truncate and kind != "submit"):
        raise ActionError(f"field 'truncate' must be a boolean, and true only on a submit; got {truncate!r}")
    fields["truncate"] = bool(truncate)
    required = {"shell": ["cmd"], "write_file": ["path"], "edit_file": ["path", "old"], "read_file": ["path"],
                "submit": [], "profile": [], "bench": []}[kind]
    if kind == "bench":
        given = [n for n in ("cmd", "path", "content", "old", "new") if fields[n]] + (["config"] if fields["config"] else [])
        if given:
            raise ActionError(f"action 'bench' takes no fields (it runs `python bench.py` on every seen config); "
                              f"got {', '.join(given)}")
    for name in required:
        if not fields[name]:
            raise ActionError(f"action {kind!r} needs a non-empty {name!r} field")
    # May be empty, but must be given: a dict that leaves them out means a mistake, not an empty file or a deletion.
    for name in {"write_file": ["content"], "edit_file": ["new"]}.get(kind, []):
        if name not in action:
            raise ActionError(f"action {kind!r} needs a {name!r} field (\"\" to {'write an empty file' if name == 'content' else 'delete the old text'})")
    return Action(kind=kind, **fields)
