"""kernelgym tasks for TRL: `KernelArenaTRLEnv`, an environment class for ``GRPOTrainer(environment_factory=...)``.

    from trl import GRPOConfig, GRPOTrainer
    from kernelgym.integrations.trl import KernelArenaTRLEnv

    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": ""}], "task": "triton-rmsnorm", "seed": 0}])
    trainer = GRPOTrainer(model=..., processing_class=tokenizer, train_dataset=dataset, args=GRPOConfig(...),
                          environment_factory=KernelArenaTRLEnv)   # get_reward is the reward; reward_funcs optional

TRL's contract (trl 1.16, trl/trainer/grpo_trainer.py): the factory is called with no arguments and its instances
are pooled and reused; ``reset(**row)`` gets the whole dataset row and returns text appended to the row's last user
message; every public function of the class is a tool, its schema built from the type hints and the docstring's
Args section (transformers' ``get_json_schema``); ``get_reward()`` is called once per finished rollout, its value
logged as ``rewards/KernelArenaTRLEnv/mean``. A tool's exception becomes ``{"error": ...}`` as the tool's result.

Here each tool is one env action and returns the observation's text; the env's budgets (`max_steps`, `max_wall_s`)
bound the episode. A rollout that ends without submit (the model stopped calling tools) is graded at
``get_reward()`` by a truncating submit, so every rollout earns the arena score of its kernel. The grade is kept
on the instance (`grade`, `metrics`). Give other defaults with ``functools.partial(KernelArenaTRLEnv, ...)``.

This module does not import TRL. Without a GPU the env runs on Triton's CPU interpreter: nothing is timed and the
best score is 120 (compile +20, correct +100).
"""
from __future__ import annotations

import types
from pathlib import Path
from typing import Any

from kernelgym.integrations._common import grade_metrics, make_env

#: Appended to the task prompt: the prompt lists the actions as JSON; here they are tools of the same names.
TOOLS_NOTE = ("\n\nHere each action is a tool of the same name with the same fields: shell(cmd), read_file(path), "
              "write_file(path, content), edit_file(path, old, new), profile(config), bench(), submit(). "
              "Call submit() when the kernel is done; an episode that ends without it is graded as it stands.")


class _NotATool:
    """A method that TRL does not offer the model as a tool: GRPOTrainer lists the class's public *functions*
    (``inspect.getmembers(cls, inspect.isfunction)``), and through the class this descriptor is no function."""

    def __init__(self, func):
        self.func = func
        self.__doc__ = func.__doc__

    def __get__(self, obj, cls=None):
        return self if obj is None else types.MethodType(self.func, obj)


class KernelArenaTRLEnv:
    """One kernelgym task as a TRL environment: the env's actions as tools, its arena score as the reward.

    Args:
        task: env id or task name used when the dataset row names none (row ``task``).
        run_dir: where episodes live (None: the env's default, ``$KERNELGYM_RUN_DIR`` or ``kernelgym-runs``).
        max_steps: env steps (tool calls) per episode; the step that spends it is graded.
        max_wall_s: seconds per episode, likewise.
        **env_kwargs: other `KernelArenaEnv` arguments (sandbox, hardware, command_timeout_s, ...).

    Attributes:
        env: the current episode's env (None before the first reset and after close).
        grade: the episode's whole grade (``info["grade"]``), None until it is graded.
        metrics: score, compiled, correct, speedup and checks of that grade ({} until graded).
        reward: the arena score once graded, else None.
        task: the task of the current episode.
    """

    def __init__(self, task: str = "KernelArena/triton-rmsnorm-v0", *, run_dir: str | Path | None = None,
                 max_steps: int = 20, max_wall_s: float = 3600.0, **env_kwargs: Any):
        self._default_task, self._max_steps, self._max_wall_s = task, max_steps, max_wall_s
        self._env_kwargs = dict(env_kwargs, **({"run_dir": run_dir} if run_dir is not None else {}))
        self.env = None
        self.task = task
        self.grade: dict[str, Any] | None = None
        self.metrics: dict[str, Any] = {}
        self.reward: float | None = None

    def reset(self, **row: Any) -> str:
        """Start an episode of the row's task; the previous episode's env is closed.

        Args:
            **row: the dataset row. ``task`` (env id or name; default: the constructor's), ``seed`` (int or None),
                and optionally ``max_steps`` / ``max_wall_s`` overriding the constructor's budgets; other keys
                (``prompt``, ...) are ignored.

        Returns:
            The task prompt with a note on the tools; TRL appends it to the row's last user message.

        Raises:
            UnknownTaskError: the row names no known task.
        """
        self._close_env()
        self.task = row.get("task") or self._default_task
        self.env = make_env(self.task, max_steps=int(row.get("max_steps") or self._max_steps),
                            max_wall_s=float(row.get("max_wall_s") or self._max_wall_s), **self._env_kwargs)
        seed = row.get("seed")
        obs, _ = self.env.reset(seed=None if seed is None else int(seed))
        self.grade, self.metrics, self.reward, self._done = None, {}, None, False
        return obs["prompt"] + TOOLS_NOTE

    # -- the tools: one env action each -----------------------------------------------------------------------------
    def shell(self, cmd: str) -> str:
        """Run a bash command in the kernel's workspace (no network), e.g. `python check.py`, which checks the kernel on the seen configs.

        Args:
            cmd: the shell command.

        Returns:
            The exit code, stdout and stderr.
        """
        return self._step({"kind": "shell", "cmd": cmd})

    def read_file(self, path: str) -> str:
        """Read a file of the workspace.

        Args:
            path: a path relative to the workspace, e.g. kernel.py.

        Returns:
            The file's text.
        """
        return self._step({"kind": "read_file", "path": path})

    def write_file(self, path: str, content: str) -> str:
        """Replace a file's whole contents, creating it if needed.

        Args:
            path: a path relative to the workspace, e.g. kernel.py.
            content: the file's new text.

        Returns:
            What was written.
        """
        return self._step({"kind": "write_file", "path": path, "content": content})

    def edit_file(self, path: str, old: str, new: str) -> str:
        """Replace one exact occurrence of `old` with `new` in a file; `old` must occur exactly once (copy it from read_file, whitespace included).

        Args:
            path: a path relative to the workspace, e.g. kernel.py.
            old: the exact text to replace.
            new: its replacement.

        Returns:
            What was replaced, or why nothing was.
        """
        return self._step({"kind": "edit_file", "path": path, "old": old, "new": new})

    def profile(self, config: int = 0) -> str:
        """Profile the kernel on one seen config: per-kernel device times, plus hardware counters where a profiler is installed.

        Args:
            config: the seen config's index in configs.json.

        Returns:
            The profiler's report.
        """
        return self._step({"kind": "profile", "config": config})

    def bench(self) -> str:
        """Run `python bench.py`: per seen config, the speedup over the original kernel and the score it implies (advisory; it does not check correctness).

        Returns:
            The bench report.
        """
        return self._step({"kind": "bench"})

    def submit(self) -> str:
        """End the episode: the kernel as it is now is graded.

        Returns:
            The grade's summary.
        """
        return self._step({"kind": "submit"})

    # -- reward and teardown ----------------------------------------------------------------------------------------
    def get_reward(self) -> float:
        """The episode's arena score; an episode not yet over is graded first (a truncating submit).

        Returns:
            The score (0 before any reset).
        """
        if self.env is None:
            return 0.0
        if not self._done:
            self._step({"kind": "submit", "truncate": True})
        return float(self.reward or 0.0)

    def _close(self) -> None:
        """Close the current episode's env (its grader worker); the next reset makes a new one. Idempotent."""
        self._close_env()

    close = _NotATool(_close)

    def __del__(self):
        # The last resort when a trainer drops its pool without close(): stop the env's grader worker.
        try:
            self._close_env()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have torn down what close needs
            pass

    def _close_env(self) -> None:
        env, self.env = self.env, None
        if env is not None:
            env.close()

    def _step(self, action: dict[str, Any]) -> str:
        if self.env is None:
            return "error: no episode; the trainer calls reset() first"
        obs, reward, terminated, truncated, info = self.env.step(action)
        if (terminated or truncated) and not self._done:
            self._done = True
            self.grade = info.get("grade") or None
            self.metrics = grade_metrics(self.grade)
            self.reward = float(reward)
        return obs["output"]
