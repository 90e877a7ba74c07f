"""Policies drive an env from outside: ``reset(observation, info)`` then ``act(observation, info) -> action``.

Built-in policies live in ``policies/<name>/`` (one folder each): ``policy.py`` with ``<Name>Config``
(a dataclass; one doc string per field) and ``<Name>Policy``, and ``config.yaml`` whose keys are the
config's fields. `load_policy` finds them by listing the folder; keyword overrides win over the YAML.
"""
from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import sys
from pathlib import Path
from typing import Any, Protocol

import yaml

from kernelgym.errors import PolicyConfigError, UnknownPolicyError

DEFAULT_POLICIES_ROOT = Path(__file__).resolve().parent / "policies"


class Policy(Protocol):
    """What `rollout` needs of a policy."""

    def reset(self, observation: dict[str, str], info: dict[str, Any]) -> None:
        """Start an episode: `observation` holds the task prompt (``observation["prompt"]``)."""

    def act(self, observation: dict[str, str], info: dict[str, Any]) -> dict[str, Any]:
        """The next action, e.g. ``{"kind": "shell", "cmd": "python check.py"}`` (see kernelgym.spaces)."""


def available_policies(root: Path = DEFAULT_POLICIES_ROOT) -> list[str]:
    """Names of the built-in policies (folders holding policy.py)."""
    return sorted(p.parent.name for p in Path(root).glob("*/policy.py"))


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("_", "-").split("-"))


def load_policy(name: str, root: Path = DEFAULT_POLICIES_ROOT, **overrides: Any) -> Policy:
    """Build the built-in policy `name` from its config.yaml, with `overrides` applied.

    Raises:
        UnknownPolicyError: no folder of that name; the message lists the policies there are.
        PolicyConfigError: an override names no field of the policy's config.
    """
    folder = Path(root) / name
    if not (folder / "policy.py").is_file():
        names = available_policies(root)
        close = difflib.get_close_matches(name, names, n=2)
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise UnknownPolicyError(f"Unknown policy {name!r}.{hint} Available: {', '.join(names)}")
    mod_name = f"kernelgym_policy_{name.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(mod_name, folder / "policy.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    spec.loader.exec_module(module)
    config_cls, policy_cls = getattr(module, f"{_camel(name)}Config"), getattr(module, f"{_camel(name)}Policy")
    values = yaml.safe_load((folder / "config.yaml").read_text()) or {} if (folder / "config.yaml").is_file() else {}
    values.update(overrides)
    known = {f.name for f in dataclasses.fields(config_cls)}
    unknown = set(values) - known
    if unknown:
        raise PolicyConfigError(f"policy {name!r}: unknown config fields {sorted(unknown)}; known: {sorted(known)}")
    return policy_cls(config_cls(**values))
