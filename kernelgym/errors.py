"""Errors raised when *our* setup is wrong (a task file, the sandbox, a hardware profile).

An agent's failing action is never an exception: it becomes observation text and `info`.
Each message says what was expected, what was found, and how to fix it.
"""


class KernelGymError(Exception):
    """Base class of every error kernelgym raises."""


class TaskSpecError(KernelGymError):
    """A task directory or its task.yaml is malformed; the message names the file and the field."""


class UnknownTaskError(KernelGymError):
    """No task of that name exists; the message lists close matches."""


class SandboxUnavailableError(KernelGymError):
    """bubblewrap is missing or cannot create namespaces here; the message says how to fix it."""


class HardwareProfileError(KernelGymError):
    """A hardware profile is malformed, unknown, or does not match the running device."""


class UnknownPolicyError(KernelGymError):
    """No built-in policy of that name exists under policies/."""


class PolicyConfigError(KernelGymError):
    """A policy's config.yaml or an override names a field the policy's config does not have."""
