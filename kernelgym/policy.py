"""Policies drive an env from outside: ``reset(observation, info)`` then ``act(observation, info) -> action``.

A policy is a folder ``<name>/`` holding ``policy.py`` with ``<Name>Config`` (a dataclass; one doc string per
field) and ``<Name>Policy``, and ``config.yaml`` whose keys are the config's fields. `load_policy` finds them
by listing folders: the built-in ones (the repository's ``policies/``), then each folder of
``KERNELGYM_POLICIES_PATH`` (os.pathsep-separated), then the folders given as ``policies_dir``. A user policy may
not reuse a name (an error naming both folders). Keyword overrides win over the YAML.

A policy.py may define ``REQUIRES``, a literal list of what the policy needs to run, each entry
``"env:VAR"`` (an environment variable, e.g. an API key), ``"binary:NAME"`` (a program where the CLI policies
look: .agents/node_modules/.bin, beside this Python, or on PATH) or
``"python:MODULE"`` (an importable module). `policy_requirements` reads it without importing the file, and
``kernelgym list`` shows it, marking what is missing here.
"""
from __future__ import annotations

import ast
import dataclasses
import difflib
import importlib.util
import os
import sys
import types
import typing
from pathlib import Path
from typing import Any, Protocol

import yaml

from kernelgym.discovery import Dirs, as_dirs, env_dirs
from kernelgym.errors import KernelGymError, PolicyConfigError, UnknownPolicyError
from kernelgym.resources import builtin_folder

#: The built-in policies: the repository's top-level policies/ folder, shipped in the package as kernelgym.policies.
DEFAULT_POLICIES_ROOT = builtin_folder("policies")
#: Environment variable listing the user's policy folders, separated by os.pathsep.
POLICIES_PATH_ENV = "KERNELGYM_POLICIES_PATH"


class Policy(Protocol):
    """What `rollout` needs of a policy: `reset`, `act` and `close`, and optionally `take_step_info`.

    `rollout` calls ``reset`` once per episode, ``act`` once per step, and ``close`` when the episode ends (in a
    ``finally``, after an error too); the same object may be reset again for the next episode. A policy without
    ``close`` is accepted (nothing to release).

    Optional ``take_step_info() -> dict``: rollout calls it after every act() (also one that raised) and puts the
    result, with ``act_wall_s`` (seconds inside act(), measured by rollout), into the step's ``info["policy"]``
    and the trajectory record's ``policy`` field. The method returns what happened since its last call and clears
    it. Keys: ``usage`` (a kernelgym.usage.StepUsage, or its dict: tokens, cost, API calls, retries, API time;
    rollout sums it into the episode's totals), and any JSON-able detail, e.g. ``tool_call`` ({id, name,
    arguments}), ``text`` (the model's words), ``context`` (what context management trimmed). A policy that calls
    no model may leave the method out: its episodes report no tokens or cost.
    """

    def reset(self, observation: dict[str, str], info: dict[str, Any]) -> None:
        """Start an episode: `observation` holds the task prompt (``observation["prompt"]``)."""

    def act(self, observation: dict[str, str], info: dict[str, Any]) -> dict[str, Any]:
        """The next action, e.g. ``{"kind": "shell", "cmd": "python check.py"}`` (see kernelgym.spaces)."""

    def close(self) -> None:
        """End the episode: release its clients, subprocesses and files. `reset` may follow."""


def policy_requirements(folder: Path) -> list[str]:
    """The ``REQUIRES`` list of a policy folder's policy.py, read without importing it ([] when absent or not a
    literal list of strings)."""
    try:
        tree = ast.parse((Path(folder) / "policy.py").read_text())
    except (OSError, SyntaxError, ValueError):
        return []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "REQUIRES" for t in targets) and node.value is not None:
                try:
                    value = ast.literal_eval(node.value)
                except ValueError:
                    return []
                return [str(v) for v in value] if isinstance(value, (list, tuple)) else []
    return []


def requirement_met(requirement: str) -> bool | None:
    """Whether ``env:VAR`` is set, ``binary:NAME`` is found where the CLI policies look for it (see
    kernelgym.agents.launcher.locate_binary: .agents/node_modules/.bin, beside this Python, PATH), ``python:MODULE``
    imports; None for another form."""
    kind, _, name = requirement.partition(":")
    if kind == "env":
        return bool(os.environ.get(name))
    if kind == "binary":
        # imported here: the launcher imports agent_tools and usage, and `kernelgym list` must not pay for it early
        from kernelgym.agents.launcher import locate_binary
        return locate_binary(name) is not None
    if kind == "python":
        try:
            return importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            return False
    return None


def policy_search_path(policies_dir: Dirs = None) -> list[Path]:
    """Where policies are looked for: the built-in folder, ``$KERNELGYM_POLICIES_PATH``, then `policies_dir`."""
    return [DEFAULT_POLICIES_ROOT, *env_dirs(POLICIES_PATH_ENV), *as_dirs(policies_dir)]


def discover_policies(policies_dir: Dirs = None) -> tuple[dict[str, Path], list[str]]:
    """Every policy folder (one holding policy.py) on the search path, and what went wrong.

    Args:
        policies_dir: the user's folders, searched after the built-in one and $KERNELGYM_POLICIES_PATH.

    Returns:
        (folders by policy name, problems): a problem is a search folder that does not exist, or a policy
        whose name an earlier folder already has (both named).
    """
    found: dict[str, Path] = {}
    problems: list[str] = []
    for root in policy_search_path(policies_dir):
        root = root.expanduser().resolve()
        if not root.is_dir():
            problems.append(f"{root}: a folder on the policy search path is not a directory "
                            f"(check ${POLICIES_PATH_ENV} and --policies-dir)")
            continue
        for folder in sorted(p.parent for p in root.glob("*/policy.py")):
            if found.get(folder.name) == folder:
                continue
            if folder.name in found:
                problems.append(f"{folder}: policy name {folder.name!r} is already taken by {found[folder.name]}; "
                                f"rename one of the folders")
                continue
            found[folder.name] = folder
    return found, problems


def available_policies(policies_dir: Dirs = None) -> list[str]:
    """Names of the policies on the search path (built-in folder, $KERNELGYM_POLICIES_PATH, `policies_dir`)."""
    return sorted(discover_policies(policies_dir)[0])


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("_", "-").split("-"))


def load_policy(name: str, policies_dir: Dirs = None, **overrides: Any) -> Policy:
    """Build the policy `name` from its folder's policy.py and config.yaml, with `overrides` applied.

    Args:
        name: the policy's folder name (``tuner``).
        policies_dir: the user's policy folders, searched after the built-in one and $KERNELGYM_POLICIES_PATH.
        overrides: config fields that win over config.yaml.

    Raises:
        UnknownPolicyError: no folder of that name; the message lists the policies there are.
        PolicyConfigError: two folders share the name; policy.py does not import or lacks ``<Name>Config`` /
            ``<Name>Policy``; config.yaml is not a mapping; a key of config.yaml or an override names no field
            of the config; or a value does not fit its field's type (`check_config_types`).
    """
    folders, problems = discover_policies(policies_dir)
    clash = [p for p in problems if f"policy name {name!r} is already taken" in p]
    if clash:
        raise PolicyConfigError(clash[0])
    if name not in folders:
        close = difflib.get_close_matches(name, folders, n=2)
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise UnknownPolicyError(f"Unknown policy {name!r}.{hint} Available: {', '.join(sorted(folders))}. "
                                 f"Add your own with --policies-dir or ${POLICIES_PATH_ENV}.")
    folder = folders[name]
    mod_name = f"kernelgym_policy_{name.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(mod_name, folder / "policy.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the user's policy.py: any error there is a setup error naming the file
        del sys.modules[mod_name]
        raise PolicyConfigError(f"{folder / 'policy.py'}: does not import: {type(e).__name__}: {e}") from e
    names = f"{_camel(name)}Config", f"{_camel(name)}Policy"
    missing = [n for n in names if not hasattr(module, n)]
    if missing:
        raise PolicyConfigError(f"{folder / 'policy.py'}: defines no {' or '.join(missing)}; a policy named "
                                f"{name!r} needs classes {names[0]} (a dataclass) and {names[1]}")
    config_cls, policy_cls = getattr(module, names[0]), getattr(module, names[1])
    config_file = folder / "config.yaml"
    try:
        values = yaml.safe_load(config_file.read_text()) if config_file.is_file() else None
    except yaml.YAMLError as e:
        raise PolicyConfigError(f"{config_file}: not valid YAML: {e}") from None
    values = {} if values is None else values
    if not isinstance(values, dict):
        raise PolicyConfigError(f"{config_file}: expected a mapping of config fields, found {type(values).__name__}")
    known = {f.name for f in dataclasses.fields(config_cls)}
    unknown = set(values) - known
    if unknown:
        raise PolicyConfigError(f"{config_file}: unknown config fields {sorted(unknown)}; known: {sorted(known)}")
    unknown = set(overrides) - known
    if unknown:
        raise PolicyConfigError(f"policy {name!r}: unknown config fields {sorted(unknown)}; known: {sorted(known)}")
    check_config_types(config_cls, values, f"{config_file}")
    check_config_types(config_cls, overrides, f"policy {name!r} (override)")
    values.update(overrides)
    return policy_cls(config_cls(**values))


def _type_name(tp: Any) -> str:
    """A field type as a reader writes it: ``int``, ``list[str]``, ``float or null``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if a is type(None) else _type_name(a) for a in args)
    if origin in (list, dict):
        return f"{origin.__name__}[{', '.join(_type_name(a) for a in args)}]" if args else origin.__name__
    return "Any" if tp is Any else getattr(tp, "__name__", str(tp))


def _fits(value: Any, tp: Any) -> bool:
    """Whether `value` (from YAML or JSON) fits the simple type `tp`: int, float (an int is accepted), str,
    bool, list[...], dict[...], a Union/Optional of those. Any other type (a class, a Literal) is not checked."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return True
    if tp is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:  # bool is an int subclass; `true` for a count is a mistake
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if tp is list or origin is list:
        return isinstance(value, list) and (not args or all(_fits(v, args[0]) for v in value))
    if tp is dict or origin is dict:
        return isinstance(value, dict) and (len(args) != 2 or all(
            _fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items()))
    return True


def check_config_types(config_cls: type, values: dict[str, Any], source: str) -> None:
    """Check `values` against `config_cls`'s field types, so a wrong type fails here with the field's name rather
    than deep inside the policy (a string where a list is expected would be iterated character by character).

    Args:
        config_cls: the policy's config dataclass.
        values: field name -> value (config.yaml's, or the overrides).
        source: where the values come from, for the message (config.yaml's path, or the overrides).

    Raises:
        PolicyConfigError: a value does not fit its field's type; the message names the field, the expected type
            and the value given.
    """
    try:
        hints = typing.get_type_hints(config_cls)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: nothing to check against
        return
    for key, value in values.items():
        tp = hints.get(key)
        if tp is not None and not _fits(value, tp):
            shown = repr(value)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            raise PolicyConfigError(f"{source}: config field {key!r} expects {_type_name(tp)}, got "
                                    f"{type(value).__name__} {shown}")


#: How to meet each kind of requirement, for `policy_problems`' messages.
_HOW = {"env": "export it, or name another variable with api_key_env in --policy-config",
        "binary": "looked for in .agents/node_modules/.bin, beside this Python and on PATH; `bash .ci/setup --agents` "
                  "installs the agent CLIs, or set binary in --policy-config to its path",
        "python": "pip install 'kernelgym[agents]'"}
#: Config fields that stand for a requirement of that kind, when the requirement is the field's default
#: (``api_key_env: ANTHROPIC_API_KEY`` for ``env:ANTHROPIC_API_KEY``): the configured value is what is checked.
_CONFIG_FIELD = {"env": "api_key_env", "binary": "binary"}


def _configured(requirement: str, config: Any) -> str | None:
    """`requirement` as `config` has it: an ``env:``/``binary:`` entry whose config field (`_CONFIG_FIELD`) defaults
    to its name becomes the configured value's; None when that value is empty (``api_key_env: null``: no key)."""
    kind, _, name = requirement.partition(":")
    field_name = _CONFIG_FIELD.get(kind)
    if config is None or field_name is None or not dataclasses.is_dataclass(config):
        return requirement
    default = next((f.default for f in dataclasses.fields(config) if f.name == field_name), dataclasses.MISSING)
    if default != name:
        return requirement
    value = getattr(config, field_name)
    return f"{kind}:{value}" if value else None


def policy_problems(name: str, policies_dir: Dirs = None, **overrides: Any) -> list[str]:
    """What stops the policy `name` from running here, found before any episode (`kernelgym run` checks every
    policy of a run of several this way): the policy must load (`load_policy`: its folder, policy.py, config, and
    the checks its own constructor makes, such as an SDK import or the scripted policy's action kinds), and each
    entry of its ``REQUIRES`` must be met (`requirement_met`): an API key's variable set, an agent CLI found, a
    module importable. The config's ``api_key_env`` and ``binary`` stand for the ``env:`` and ``binary:`` entries
    they default to, so ``--policy-config '{"api_key_env": null}'`` needs no key.

    Returns:
        One line per problem, each starting ``policy NAME:``; empty when the policy can run.
    """
    try:
        policy = load_policy(name, policies_dir=policies_dir, **overrides)
    except UnknownPolicyError as e:  # no folder: no REQUIRES to read either
        return [f"policy {name!r}: {e}"]
    except KernelGymError as e:  # its message may name the policy already (the scripted policy's kinds)
        text = str(e)
        policy, problems = None, [text if text.startswith(f"policy {name!r}") else f"policy {name!r}: {text}"]
    else:
        problems = []
    folder = discover_policies(policies_dir)[0][name]
    for requirement in policy_requirements(folder):
        if policy is None and requirement.startswith("python:"):
            continue  # a missing SDK is what the load error above says
        needed = _configured(requirement, getattr(policy, "config", None))
        if needed is not None and requirement_met(needed) is False:
            kind, _, what = needed.partition(":")
            label = {"env": "environment variable", "binary": "program", "python": "Python module"}[kind]
            problems.append(f"policy {name!r}: needs {label} {what!r}, which is "
                            f"{'not set' if kind == 'env' else 'not found' if kind == 'binary' else 'not importable'}"
                            f" ({_HOW[kind]})")
    return problems
