"""kernelgym: GPU-kernel optimization tasks as Gymnasium environments.

    import gymnasium as gym, kernelgym
    env = gym.make("KernelArena/triton-rmsnorm-v0")

Importing the package registers every task on the search path as ``KernelArena/<language>-<name>-v<N>``: the
built-in tasks and the folders of ``$KERNELGYM_TASKS_PATH``. ``kernelgym.register_tasks(tasks_dir=...)``
registers more. A broken task.yaml warns (`DiscoveryWarning`) and the other tasks register as usual.
"""
from kernelgym.env import KernelArenaEnv
from kernelgym.errors import (HardwareProfileError, KernelGymError, SandboxUnavailableError, TaskSpecError,
                              UnknownTaskError)
from kernelgym.registration import register_tasks
from kernelgym.discovery import (DiscoveryWarning, TaskProblem, discover_tasks, discover_tasks_report, get_task,
                                 task_search_path)
from kernelgym.task import Task, load_task
from kernelgym.catalog import TaskInfo, list_tasks, task_dataset, task_prompt

__version__ = "0.1.0"
__all__ = ["KernelArenaEnv", "Task", "TaskProblem", "DiscoveryWarning", "discover_tasks", "discover_tasks_report",
           "get_task", "load_task", "register_tasks", "task_search_path", "KernelGymError", "TaskSpecError",
           "list_tasks", "task_dataset", "task_prompt", "TaskInfo", "UnknownTaskError", "SandboxUnavailableError", "HardwareProfileError"]

register_tasks()
