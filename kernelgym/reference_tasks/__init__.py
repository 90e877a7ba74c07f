"""The reference arena's own task format (AgentKernelArena's config.yaml folders) as kernelgym envs.

spec.py loads and finds task folders; support.py says where each can run; placeholder.py and timing_helpers.py supply
the benchmark helpers the format's runners expect; grader.py grades by the folder's own commands; prompt.py writes
the prompt; format.py is the task format by which the one env, `KernelArenaEnv`, takes such a folder
(kernelgym/task_format.py); validate.py checks a folder; registration.py registers the folders' envs.
docs/REFERENCE_TASKS.md describes it all.
"""
from kernelgym.reference_tasks.spec import (ReferenceTask, ReferenceTaskSpec, discover_reference_tasks,
                                            find_reference_task, is_reference_task_dir, load_reference_task)
from kernelgym.reference_tasks.support import UnsupportedTaskError, unsupported_reason

__all__ = ["ReferenceTask", "ReferenceTaskSpec", "UnsupportedTaskError", "discover_reference_tasks",
           "find_reference_task", "is_reference_task_dir", "load_reference_task", "unsupported_reason"]
