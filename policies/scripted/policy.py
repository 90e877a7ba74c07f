"""`scripted`: replays a fixed list of actions, then submits. For tests, demos and replays of logged episodes."""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from kernelgym.errors import PolicyConfigError
from kernelgym.spaces import ACTION_KINDS

#: Nothing beyond kernelgym itself (see kernelgym.policy: REQUIRES).
REQUIRES: list[str] = []


@dataclass
class ScriptedConfig:
    actions: list[dict[str, Any]] = field(default_factory=list)
    """Actions to replay in order, e.g. [{"kind": "shell", "cmd": "python check.py"}]; a submit is added at the end."""

    def __post_init__(self) -> None:
        for i, action in enumerate(self.actions if isinstance(self.actions, list) else []):
            check_kind(action, i)


def check_kind(action: Any, index: int) -> None:
    """Refuse an action whose kind is not one of `ACTION_KINDS` (a name, or its index as the action space has it).

    A kind the env does not know only gets an error observation at its step, so a typo (``"shel"``) ran the whole
    episode and exited 0; caught here, it stops the run before it starts. The action's other fields are the env's
    to check: a replay may hold malformed actions on purpose.

    Raises:
        PolicyConfigError: the kind is missing or unknown; the message names it, its place in `actions`, and the
            kinds there are.
    """
    kind = action.get("kind") if isinstance(action, dict) else None
    if isinstance(kind, int) and not isinstance(kind, bool) and 0 <= kind < len(ACTION_KINDS):
        return
    if isinstance(kind, str) and kind in ACTION_KINDS:
        return
    close = difflib.get_close_matches(kind, ACTION_KINDS, n=1) if isinstance(kind, str) else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    what = f"unknown kind {kind!r}{hint}" if isinstance(action, dict) and "kind" in action else "no 'kind'"
    shown = repr(action) if len(repr(action)) <= 80 else repr(action)[:77] + "..."  # a write_file's content is long
    raise PolicyConfigError(f"policy 'scripted': actions[{index}] {shown} has {what}; the kinds are "
                            f"{', '.join(ACTION_KINDS)}")


class ScriptedPolicy:
    """Replays `config.actions`; submits when they run out."""

    def __init__(self, config: ScriptedConfig):
        self.config = config
        self._queue: list[dict[str, Any]] = []

    def reset(self, observation: dict[str, str], info: dict[str, Any]) -> None:
        self._queue = list(self.config.actions)

    def act(self, observation: dict[str, str], info: dict[str, Any]) -> dict[str, Any]:
        return self._queue.pop(0) if self._queue else {"kind": "submit"}

    def close(self) -> None:
        """Nothing to release."""
