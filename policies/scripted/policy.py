"""`scripted`: replays a fixed list of actions, then submits. For tests, demos and replays of logged episodes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Nothing beyond kernelgym itself (see kernelgym.policy: REQUIRES).
REQUIRES: list[str] = []


@dataclass
class ScriptedConfig:
    actions: list[dict[str, Any]] = field(default_factory=list)
    """Actions to replay in order, e.g. [{"kind": "shell", "cmd": "python check.py"}]; a submit is added at the end."""


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
