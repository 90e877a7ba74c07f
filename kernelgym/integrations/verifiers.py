"""kernelgym tasks as a verifiers 0.4.x environment: ``load_environment(tasks=[...])``.

verifiers 0.4 is its v1 stack only (``import verifiers.v1 as vf``; the MultiTurnEnv, ToolEnv and GymEnv of 0.3 are
gone): an environment is a `Taskset` of `Task` s, each task's tools an MCP `Toolset` launched per rollout, its
score `@vf.reward` methods. Here:

- `KernelArenaToolset`: one per rollout, in its own process (``python -m kernelgym.integrations.verifiers``); it
  makes the rollout's env (``gym.make`` of the task's env id) at setup and exposes the env's actions as tools
  (shell, read_file, write_file, edit_file, profile, bench, submit), each one ``env.step`` in a thread. The episode's
  end (submit, or the env's step budget) writes the arena score and grade into the rollout's `KernelArenaState`.
- `KernelArenaTask`: its reward ``arena_score`` is that score (0 when the model never ended the episode); metrics
  ``compiled`` and ``correct``; it stops the rollout once the episode is over.
- `KernelArenaTaskset`: one task per kernelgym task name and seed; its prompt is the env's own reset prompt.

Importing this module needs verifiers (``pip install 'kernelgym[verifiers]'``, in a venv of its own: it pins
mcp==2.0.0 and openai<3).
"""
from __future__ import annotations

import asyncio
import sys
from typing import Any

try:
    import verifiers.v1 as vf
except ImportError as e:  # pragma: no cover - depends on the install
    raise ImportError("kernelgym.integrations.verifiers needs verifiers 0.4.x: pip install 'kernelgym[verifiers]' "
                      "(in a venv of its own)") from e

from kernelgym.integrations._common import grade_metrics, make_env

SYSTEM = ("You optimise a GPU kernel. Act only through the tools; each is one of the actions the task lists, with "
          "the same fields. Call submit when the kernel is done.")


class KernelArenaState(vf.State):
    """What the tool server tells the host about the rollout's episode."""

    done: bool = False
    """The episode ended (submitted, or the env's step budget spent)."""
    score: float | None = None
    """The arena score of the graded kernel; None until the episode ends."""
    grade: dict = {}
    """The grade's score, compiled, correct, speedup and checks (`kernelgym.integrations._common.grade_metrics`)."""
    steps: int = 0
    """Env steps taken."""


class KernelArenaData(vf.TaskData):
    """One episode: which task, which reset seed, which budget."""

    env_id: str
    """A KernelArena env id (``KernelArena/triton-rmsnorm-v0``) or a task name."""
    seed: int = 0
    max_steps: int = 20
    run_dir: str | None = None
    """Where the env keeps its workspace; None: the env's default."""


class KernelArenaToolsetConfig(vf.ToolsetConfig):
    pass


class KernelArenaToolset(vf.Toolset[KernelArenaToolsetConfig, KernelArenaState]):
    """The env's actions as MCP tools, bare names (no server prefix), over one env per rollout."""

    TOOL_PREFIX = None

    env = None

    async def setup_task(self, task: KernelArenaData | KernelArenaTask) -> None:
        data = getattr(task, "data", task)  # the task channel hands over the task's data
        kwargs: dict[str, Any] = {"max_steps": data.max_steps}
        if data.run_dir:
            kwargs["run_dir"] = data.run_dir
        self.env = await asyncio.to_thread(make_env, data.env_id, **kwargs)
        await asyncio.to_thread(self.env.reset, seed=data.seed)
        self._exit_stack.callback(self.env.close)

    async def _step(self, action: dict[str, Any]) -> str:
        if self.state.done:
            return "error: the episode is over (the kernel was graded); no more actions"
        obs, reward, terminated, truncated, info = await asyncio.to_thread(self.env.step, action)
        self.state.steps += 1
        if terminated or truncated:
            self.state.done = True
            self.state.score = float(reward)
            self.state.grade = grade_metrics(info.get("grade"))
        return obs["output"]

    @vf.tool
    async def shell(self, cmd: str) -> str:
        """Run a bash command in the workspace (no network), e.g. `python check.py`. Returns exit code and output."""
        return await self._step({"kind": "shell", "cmd": cmd})

    @vf.tool
    async def read_file(self, path: str) -> str:
        """Read a file of the workspace (a path relative to it, e.g. kernel.py)."""
        return await self._step({"kind": "read_file", "path": path})

    @vf.tool
    async def write_file(self, path: str, content: str) -> str:
        """Replace a file's whole contents (creating it if needed)."""
        return await self._step({"kind": "write_file", "path": path, "content": content})

    @vf.tool
    async def edit_file(self, path: str, old: str, new: str) -> str:
        """Replace one exact occurrence of `old` with `new` in a file; `old` must occur exactly once."""
        return await self._step({"kind": "edit_file", "path": path, "old": old, "new": new})

    @vf.tool
    async def profile(self, config: int = 0) -> str:
        """Profile the kernel on one seen config (its index in configs.json)."""
        return await self._step({"kind": "profile", "config": config})

    @vf.tool
    async def bench(self) -> str:
        """Run `python bench.py`: per seen config the speedup over the original kernel (advisory)."""
        return await self._step({"kind": "bench"})

    @vf.tool
    async def submit(self) -> str:
        """End the episode; the kernel as it is now is graded."""
        return await self._step({"kind": "submit"})


class KernelArenaTaskConfig(vf.TaskConfig):
    tools: KernelArenaToolsetConfig = KernelArenaToolsetConfig()


class KernelArenaTask(vf.Task[KernelArenaData, KernelArenaState, KernelArenaTaskConfig]):
    """One kernelgym episode, scored by the arena score."""

    @classmethod
    def toolsets(cls, config: KernelArenaTaskConfig) -> list[vf.Toolset]:
        return [KernelArenaToolset(config.tools)]

    @vf.stop
    async def episode_over(self, trace: vf.Trace) -> bool:
        return trace.state.done

    @vf.reward(weight=1.0)
    async def arena_score(self, trace: vf.Trace) -> float:
        return float(trace.state.score or 0.0)

    @vf.metric
    async def correct(self, trace: vf.Trace) -> float:
        return float(bool(trace.state.grade.get("correct")))

    @vf.metric
    async def compiled(self, trace: vf.Trace) -> float:
        return float(bool(trace.state.grade.get("compiled")))


class KernelArenaConfig(vf.TasksetConfig):
    tasks: list[str] = ["triton-rmsnorm"]
    """Task names or env ids."""
    seeds: int = 1
    """Tasks per kernelgym task (reset seeds 0..seeds-1)."""
    max_steps: int = 20
    run_dir: str | None = None
    task: KernelArenaTaskConfig = KernelArenaTaskConfig()


class KernelArenaTaskset(vf.Taskset[KernelArenaTask, KernelArenaConfig]):
    """One task per kernelgym task and seed, prompted with the env's own reset prompt."""

    def load(self) -> list[KernelArenaTask]:
        from kernelgym.catalog import task_prompt

        return [KernelArenaTask(KernelArenaData(
                    name=f"{name}#{seed}", env_id=name, seed=seed, max_steps=self.config.max_steps,
                    run_dir=self.config.run_dir, system_prompt=SYSTEM,
                    prompt=task_prompt(name, max_steps=self.config.max_steps)), self.config.task)
                for name in self.config.tasks for seed in range(self.config.seeds)]


#: The taskset id verifiers loads this module by: its loader imports a plugin by a top-level name only.
TASKSET_ID = "kernelgym_verifiers"
sys.modules.setdefault(TASKSET_ID, sys.modules[__name__])


def load_environment(**kwargs: Any) -> vf.Env:
    """A verifiers env over kernelgym tasks.

    Args:
        **kwargs: `KernelArenaConfig` fields (tasks, seeds, max_steps, run_dir); ``agent`` (a verifiers
            AgentConfig dict, default the null harness: a plain chat loop with MCP tools) and other ``EnvConfig``
            fields go to the env.

    Returns:
        vf.Env: verifiers' SingleAgentEnv over `KernelArenaTaskset`.

    Raises:
        pydantic.ValidationError: a field of the wrong type.
    """
    env_fields = {k: kwargs.pop(k) for k in list(kwargs) if k in vf.EnvConfig.model_fields and k != "taskset"}
    # A local chat loop by default: the env itself runs here, so remote runtimes would need tunnels.
    env_fields.setdefault("agent", {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}})
    config = vf.SingleAgentEnvConfig(taskset={"id": TASKSET_ID, **kwargs}, **env_fields)
    return vf.load_environment(config)


__all__ = ["KernelArenaTaskset"]


if __name__ == "__main__":
    KernelArenaToolset.run()
