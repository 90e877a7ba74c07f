"""kernelgym: GPU-kernel optimization tasks as Gymnasium environments.

    import gymnasium as gym, kernelgym
    env = gym.make("KernelArena/triton-rmsnorm-v0")

Importing the package registers every task found under ``tasks/`` as ``KernelArena/<language>-<name>-v<N>``.
"""
from kernelgym.env import KernelArenaEnv
from kernelgym.errors import (HardwareProfileError, KernelGymError, SandboxUnavailableError, TaskSpecError,
                              UnknownTaskError)
from kernelgym.registration import register_tasks
from kernelgym.discovery import discover_tasks, get_task
from kernelgym.task import Task, load_task

__version__ = "0.1.0"
__all__ = ["KernelArenaEnv", "Task", "discover_tasks", "get_task", "load_task", "register_tasks", "KernelGymError",
           "TaskSpecError", "UnknownTaskError", "SandboxUnavailableError", "HardwareProfileError"]

register_tasks()
