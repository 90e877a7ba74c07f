"""The private store of generated unseen configs.

Stored outside every workspace and run directory (default ``~/.local/share/kernelgym/private``, or
``$KERNELGYM_PRIVATE_DIR``), which the sandbox never mounts: the values never reach a shell command, an
observation or a prompt. Files are created with mode 0600. The generator is public, so its seed is not: it is
mixed with a random secret created once in the store.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path
from typing import Any

from kernelgym.grader.reference import reference_outputs
from kernelgym.hardware import HardwareProfile
from kernelgym.task import Task
from kernelgym.unseen.generator import generate_unseen_configs


def private_dir() -> Path:
    """Root of the private store."""
    return Path(os.environ.get("KERNELGYM_PRIVATE_DIR", Path.home() / ".local" / "share" / "kernelgym" / "private"))


def _secret_seed(task: Task, seed: int) -> int:
    """The generator's seed: the public `seed` mixed with a random secret kept in the private store, so the
    values cannot be recomputed from the public generator and a guessable seed."""
    path = private_dir() / "secret"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
    digest = hashlib.sha256(path.read_bytes() + f"{task.name}:{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def _validator(task: Task):
    import torch

    def validate(cfg: dict) -> str | None:
        try:
            outs = reference_outputs(task, cfg, 0)
        except Exception as e:  # noqa: BLE001 - the reference failing rejects the config
            return f"the reference failed: {type(e).__name__}: {e}"
        for o, out in zip(task.spec.outputs, outs):
            if not isinstance(out, torch.Tensor) or (out.is_floating_point() and not bool(torch.isfinite(out).all())):
                return f"the reference gave a non-finite output {o.name!r}"
        return None
    return validate


def unseen_configs(task: Task, hardware: HardwareProfile, seed: int = 0) -> tuple[list[dict[str, Any]], list[str]]:
    """The unseen configs of `task` for this kind of hardware and seed: loaded from the private store, or
    generated, validated against the reference, and stored. Returns (configs, generation log)."""
    kind = "interpreter" if hardware.interpreter else "gpu"
    path = private_dir() / task.name / f"unseen-{kind}-seed{seed}.json"
    if path.is_file():
        data = json.loads(path.read_text())
        return data["configs"], data["log"]
    memory = None
    if not hardware.interpreter:
        import torch
        memory = torch.cuda.get_device_properties(0).total_memory if torch.cuda.is_available() else None
    configs, log = generate_unseen_configs(task, _secret_seed(task, seed), interpreter=hardware.interpreter,
                                           memory_bytes=memory,
                                           validate=_validator(task))
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"task": task.env_id, "seed": seed, "hardware_kind": kind, "configs": configs, "log": log}, f, indent=1)
    return configs, log
