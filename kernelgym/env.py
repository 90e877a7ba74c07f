"""`KernelArenaEnv`: a GPU-kernel optimization task as a Gymnasium environment."""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import stat
import time
import uuid
import warnings
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from kernelgym.discovery import EPISODE_RECORD
from kernelgym.grader import Grade, GraderConfig
from kernelgym.grader.outcome import is_infra_fault
from kernelgym.grader.files import tree_bytes as workspace_bytes  # noqa: F401 - kept importable from here
from kernelgym.grader.files import remove_tree, tree_usage
from kernelgym.grader.gpu_schedule import scheduled_lock, turn_files
from kernelgym.hardware import HardwareProfile, detect_profile
from kernelgym.sandbox import Limits, make_sandbox
from kernelgym.spaces import (MAX_FILE_CHARS, MAX_OBS_CHARS, Action, ActionError, action_space,
                              observation_space, parse_action, to_observation_text)
from kernelgym.task import Task
from kernelgym.task_format import EpisodeGrader, format_of, resolve_task
from kernelgym.workspace import resolve_in_workspace

if TYPE_CHECKING:
    from kernelgym.reference_tasks.spec import ReferenceTask

DEFAULT_RUN_DIR = Path(os.environ.get("KERNELGYM_RUN_DIR", "kernelgym-runs"))
#: Files, directories and links a workspace may hold (`KernelArenaEnv`'s workspace_cap_files): a task's files and a
#: Triton cache are a few hundred; the byte cap alone let one step make 300,000 empty files (6 MiB counted).
DEFAULT_WORKSPACE_CAP_FILES = 100_000
#: Episodes made ahead with prepare_ahead (the next one, prepared at each submit, and those spawned after it): each
#: worker needs its torch import and its preparation, about 4.5 s together on an H100 host, before its grading starts,
#: and a prepared grading with no think time takes about 1 s: with 2, a 1-env immediate submit still waited a median
#: 1.2 s for its preparation (benchmarks/results/README.md, twelfth session).
PREPARE_AHEAD_DEPTH = 3


def _discard_made_ahead(ahead: list) -> None:
    """Stop the processes of the episodes in `ahead` (made ahead and never started) and remove their folders; empties
    the list (`KernelArenaEnv.close`, or the env dropped without it)."""
    episodes = list(ahead)
    ahead.clear()
    for _, folder, grader in episodes:
        grader.stop_worker()
        remove_tree(folder)


def check_env_args(render_mode: str | None, max_steps: int) -> None:
    """Refuse constructor arguments no env of this package takes.

    Raises:
        ValueError: `render_mode` is not None or ``"ansi"``, or `max_steps` is below 1.
    """
    if render_mode not in (None, "ansi"):
        raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")


class KernelArenaEnv(gym.Env):
    """Optimize a GPU kernel inside a sandboxed workspace; the episode ends with the gated arena score.

    ## Description
    Each episode gets a fresh copy of the task's public files (the baseline kernel, the PyTorch reference,
    `check.py`, `bench.py`, `configs.json`) in its own directory under `run_dir`. Shell commands run under bubblewrap
    (no network, clean environment, read-only system, only the workspace writable).

    ## Action space
    | key | space | meaning |
    |---|---|---|
    | kind | Discrete(7) | 0 shell, 1 write_file, 2 edit_file (exact, unique string replacement), 3 read_file, 4 submit, 5 profile, 6 bench (advisory: what the grader would reward; docs/BENCH.md) |
    | cmd | Text | shell command (kind shell) |
    | path | Text | file path in the workspace (file kinds) |
    | content | Text | new file contents (write_file) |
    | old, new | Text | text to replace and its replacement (edit_file) |
    | config | Discrete(64) | index of the seen config to profile (profile): per-kernel device times, and hardware
      counters where ncu (NVIDIA) or rocprof (AMD) is installed |

    step() also accepts a plain dict or a JSON string, e.g. ``{"kind": "shell", "cmd": "python check.py"}``.
    A malformed action gives an error observation; the episode goes on.

    ## Observation space
    ``{"output": Text, "prompt": Text}``: the last action's output (compiler, test and profiler text), and
    the task prompt at reset (empty afterwards).

    ## Rewards (Score)
    0 on every step but the last. On the last, the arena score of the kernel in the workspace: gated
    compile (+20) -> correctness on every seen config (+100) -> performance (+100 x speedup, the arithmetic
    mean of per-config baseline/candidate times, each the interquartile mean of its timed runs). On the CPU interpreter there is no speedup term.

    ## Episode end
    terminated: the policy submitted. truncated: `max_steps` steps or `max_wall_s` seconds spent, or a submit
    with ``"truncate": true`` (the policy stopped without submitting, e.g. an agent CLI exited). The kernel is
    graded either way; `info["grade"]` holds the whole grade.

    ## Task formats
    A task is a folder in kernelgym's own format (task.yaml; docs/TASKS.md) or in the reference arena's (config.yaml;
    docs/REFERENCE_TASKS.md), chosen by the folder's files (kernelgym/task_format.py). A reference-format task's
    workspace is its folder's own files, its prompt the arena's, and its grade comes from the folder's own compile,
    correctness and performance commands; its profile and bench actions answer with an error observation.

    ## Arguments
    task: task name, env id, task folder, or a loaded `Task` / `ReferenceTask`. run_dir: where episodes live. hardware: profile id, or None
    to detect. sandbox: "bwrap" (default) or "none" (explicit opt-out; warns). max_steps, max_wall_s:
    budgets. command_timeout_s: limit per shell command. grader: `GraderConfig`. render_mode: "ansi".
    tasks_dir: the user's own task folders, searched after the built-in tasks and $KERNELGYM_TASKS_PATH.
    workspace_cap_bytes: disk space the workspace may take (default 4 GiB); an action that leaves it above gets an
    error note in its observation (each file is also capped at 2 GiB while written). workspace_cap_files: files,
    directories and links the workspace may hold (default 100,000; an empty file costs an inode and no byte); past
    it, the same error note. spawn_ahead: while an episode is graded, start the next episode's grading processes
    (default True: a reset and an immediate submit then wait for no Python start); False for an env that serves one
    episode and is closed (the trainer adapters make one per episode), where they would start only to be killed.
    prepare_ahead: with spawn_ahead, where this episode began with reset() without a seed (the autoreset of vector
    envs), also peek at the next grading seed at its end (the draw the next reset() will make, on a copy of
    np_random) and have those processes prepare that grading while this one is graded; they are spawned a submit or
    two earlier (`PREPARE_AHEAD_DEPTH` episodes made ahead), so that they have imported torch by then, and the next
    reset() and an immediate submit wait for no preparing either. reset() still draws its seed itself and takes the
    prepared grading only where the draw is the one peeked at (a reseed, or another draw from np_random since,
    discards it), so the grading seeds are the same either way. After a reset(seed=...) nothing is prepared ahead (a
    caller that seeds every reset would only waste it). Default False: it holds three more grading processes per env
    through the episode (one with its CUDA context and inputs). On an H100 with 2 made ahead, a 1-env immediate
    submit took 2.77 s median against 3.63 s off, with the noise as low; with 3, not yet measured
    (benchmarks/results/README.md, twelfth session).

    Raises:
        UnknownTaskError: no task of that name, env id or folder (the message offers close matches).
        TaskSpecError: the task's folder is broken.
        UnsupportedTaskError, TaskSpecError: the task cannot run on this hardware (the reason is said).
        SandboxUnavailableError: bubblewrap cannot run here (the message names the fix).

    ## Version History
    v0: initial version.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, task: str | Path | Task | ReferenceTask = "triton-rmsnorm", *,
                 run_dir: str | Path | None = None, hardware: str | HardwareProfile | None = None,
                 sandbox: str = "bwrap", max_steps: int = 50, max_wall_s: float = 3600.0,
                 command_timeout_s: float = 300.0, grader: GraderConfig | None = None,
                 render_mode: str | None = None, tasks_dir: str | Path | list[str | Path] | None = None,
                 workspace_cap_bytes: int = 4 << 30, workspace_cap_files: int = DEFAULT_WORKSPACE_CAP_FILES,
                 spawn_ahead: bool = True, prepare_ahead: bool = False):
        check_env_args(render_mode, max_steps)
        self.task = resolve_task(task, tasks_dir=tasks_dir)
        self.task_format = format_of(self.task)
        self.hardware = hardware if isinstance(hardware, HardwareProfile) else detect_profile(hardware)
        # Refused now, with the reason: the task's unsupported_hardware, or the reference folder's platform support.
        self.task_format.require_supported(self.task, self.hardware)
        self.run_dir = Path(run_dir if run_dir is not None else DEFAULT_RUN_DIR).resolve()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.sandbox_kind = sandbox
        make_sandbox(sandbox, self.run_dir)  # refused now, with the fix, if bubblewrap cannot run
        self.max_steps, self.max_wall_s, self.render_mode = max_steps, max_wall_s, render_mode
        self.command_limits = Limits(timeout_s=command_timeout_s)
        self.workspace_cap_bytes = workspace_cap_bytes
        self.spawn_ahead, self.prepare_ahead = spawn_ahead, prepare_ahead
        self.workspace_cap_files = workspace_cap_files
        # The grader sandboxes the candidate as the env sandboxes commands.
        self.grader_config = self.task_format.grader_config(dataclasses.replace(grader or GraderConfig(),
                                                                                sandbox=sandbox))
        self.action_space = action_space()
        self.observation_space = observation_space()
        self.workspace: Path | None = None
        self.grader: EpisodeGrader | None = None
        # The episodes made ahead, the next one first (see `_start_next_episode`); each reset() takes the first.
        self._ahead: list[tuple[str, Path, EpisodeGrader]] = []
        # An env dropped without close() leaves neither their processes nor their folders behind.
        weakref.finalize(self, _discard_made_ahead, self._ahead)
        self._next_grading_seed: int | None = None  # peeked at for the next episode where its grading was prepared
        self._reset_unseeded = False  # whether the last reset() was given no seed
        self._done = True
        self._last_output = ""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if getattr(self, "grader", None) is not None:
            self.grader.stop_worker()
        # The episode made ahead while the last one was graded (its grader's processes started then), else a new one.
        ahead = getattr(self, "_ahead", [])
        next_episode = ahead.pop(0) if ahead else None
        prepared_seed, self._next_grading_seed = self._next_grading_seed, None
        self._reset_unseeded = seed is None  # the caller's pattern: `_start_next_episode` prepares ahead only then
        self.episode_id, self.episode_dir, self.grader = next_episode or self._new_episode()
        fmt = self.task_format
        self.workspace = fmt.create_workspace(self.task, self.episode_dir / "workspace", self.hardware,
                                              self.grader_config)
        # Outside the workspace: what `kernelgym unseen RUN_DIR` needs to replay this episode later.
        (self.episode_dir / EPISODE_RECORD).write_text(json.dumps(
            {"task": self.task.name, "task_dir": str(self.task.root), "env_id": self.task.env_id,
             "hardware": self.hardware.id, "episode_id": self.episode_id, "seed": seed, "format": fmt.name}))
        lock = scheduled_lock(self.grader_config, self.hardware)  # bench.py's turns on the GPU (estimate.py)
        self.sandbox = make_sandbox(self.sandbox_kind, self.workspace, gpu=not self.hardware.interpreter,
                                    env=fmt.sandbox_env(self.task, self.hardware), limits=self.command_limits,
                                    readonly=turn_files(lock))
        # Drawn now so the warm worker can prepare this very grading while the agent works (worker.py); a grading
        # prepared ahead (`_start_next_episode`) serves where its seed is this very draw.
        self._grading_seed = _grading_seed(self.np_random)
        if self.grader_config.warm_worker and prepared_seed != self._grading_seed:
            self.grader.start_worker(seed=self._grading_seed)
        if self.grader_config.warm_worker and self.spawn_ahead and self.prepare_ahead:
            # Spawned now where no submit spawned it already (`_start_next_episode`), prepared at this
            # episode's end: a worker spawned only then is still importing torch when its preparation is asked for.
            self._start_next_episode(prepare=False)
        self.steps, self.start_time, self._done, self.grade = 0, time.monotonic(), False, None
        prompt = fmt.build_prompt(self.task, self.hardware, self.workspace, self.max_steps, self.max_wall_s)
        self._last_output = ""
        return ({"output": "", "prompt": to_observation_text(prompt)},
                self._info(kind="reset", error="", grade=None))

    def step(self, action):
        if self.workspace is None or self._done:
            msg = "error: the episode is over (or never started); call reset()"
            return ({"output": msg, "prompt": ""}, 0.0, True, False, self._info(kind="none", error=msg, grade=None))
        self.steps += 1
        error, kind, stopped = "", "invalid", False
        try:
            act = parse_action(action)
            kind, stopped = act.kind, act.truncate
            output = self._execute(act)
        except ActionError as e:
            error = str(e)
            output = f"error: {e}"
        except (OSError, ValueError, RecursionError) as e:  # a file name too long, a NUL byte, a path 2000 levels deep
            error = f"{type(e).__name__}: {e}"
            output = f"error: {error}"
        terminated = kind == "submit" and not stopped
        truncated = not terminated and (stopped or self.steps >= self.max_steps or
                                        time.monotonic() - self.start_time >= self.max_wall_s)
        reward = 0.0
        if terminated or truncated:
            why = ("submitted" if terminated else "the policy stopped without submitting; grading the current kernel"
                   if stopped else "budget spent (steps or wall-clock); grading the current kernel")
            if self.grader_config.warm_worker and self.spawn_ahead:
                self._start_next_episode()
            self.grade = self._grade()
            if self._ahead:
                self._ahead[0][2].release_observer()  # held while this episode's candidate ran
            (self.episode_dir / "grade.json").write_text(json.dumps(self.grade.to_dict(), default=str))
            output = f"{output}\n[{why}]\n{self.grade.summary()}".lstrip()
            reward, self._done = float(self.grade.score), True
        self._last_output = to_observation_text(output)
        return ({"output": self._last_output, "prompt": ""}, reward, terminated, truncated,
                self._info(kind=kind, error=error, grade=self.grade))

    def close(self):
        if getattr(self, "grader", None) is not None:
            self.grader.stop_worker()
        _discard_made_ahead(getattr(self, "_ahead", []))
        self._next_grading_seed = None
        super().close()

    def _start_next_episode(self, prepare: bool = True) -> None:
        """Make the next episode while this one runs or is graded, and start its grader's processes (`spawn`): a reset
        and an immediate submit then wait for neither Python process to start. With `prepare` and prepare_ahead, after
        a reset() without a seed, also peek at the next grading seed (the draw the next reset() makes) and have them
        prepare that grading; the observer's part of it waits until this episode's grading is done
        (`release_observer`), since this episode's candidate runs meanwhile; and start the processes of the episode
        after it, up to `PREPARE_AHEAD_DEPTH` made ahead (`_ahead`), which later resets take in turn: a worker
        imports torch (2-3 s) and then prepares (about 2 s) before its grading can start, and with no think time an
        episode lasts about 1 s once prepared. Made once and prepared once per episode: a step retried after its
        grading raised finds all done. Made ahead only for speed: where it fails (no process or folder could be
        made), a warning says so and the grading goes on; the next reset() makes what is missing."""
        try:
            if not self._ahead:
                self._ahead.append(self._new_episode())
                self._ahead[0][2].spawn()
            if prepare and self.prepare_ahead and self._reset_unseeded and self._next_grading_seed is None:
                seed = _grading_seed(copy.deepcopy(self.np_random))
                self._ahead[0][2].start_worker(seed=seed, hold_observer=True)
                self._next_grading_seed = seed  # only once prepared: else the next reset() starts its own
                while len(self._ahead) < PREPARE_AHEAD_DEPTH:
                    self._ahead.append(self._new_episode())
                    self._ahead[-1][2].spawn()
        except Exception as e:  # noqa: BLE001 - a speed-up only: never the episode's grading
            warnings.warn(f"kernelgym: the next episode could not be made ahead ({type(e).__name__}: {e}); the next "
                          f"reset() makes it", RuntimeWarning, stacklevel=3)

    def _new_episode(self) -> tuple[str, Path, EpisodeGrader]:
        """A new episode's id, folder (owner-only: files the sandboxed agent or kernel made, even setuid ones when
        run as root, are out of other host users' reach) and grader."""
        episode_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
        episode_dir = self.run_dir / "episodes" / episode_id
        episode_dir.mkdir(parents=True, mode=0o700)
        episode_dir.chmod(0o700)
        grader = self.task_format.make_grader(self.task, self.hardware, episode_dir / "grading", self.grader_config,
                                              self.workspace_cap_bytes)
        return episode_id, episode_dir, grader

    def render(self):
        if self.render_mode == "ansi":
            return f"[{self.task.env_id} step {getattr(self, 'steps', 0)}/{self.max_steps}]\n{self._last_output}\n"
        return None

    # -- actions -----------------------------------------------------------------------------------
    def _execute(self, act: Action) -> str:
        output = self._execute_action(act)
        if act.kind in ("shell", "write_file", "edit_file", "profile", "bench"):
            # One walk for both caps: a step that makes 300,000 empty files takes a few MiB and every inode.
            used = tree_usage(self.workspace, self.workspace_cap_bytes, self.workspace_cap_files)
            if used.bytes > self.workspace_cap_bytes:
                output += (f"\n[error: the workspace holds over {_size(used.bytes)}, more than its cap of "
                           f"{_size(self.workspace_cap_bytes)}: remove files (the grader copies only the editable "
                           f"files)]")
            if used.unreadable:
                output += (f"\n[error: {used.unreadable} directories of the workspace cannot be listed, so what they "
                           f"hold is not held to the workspace's cap: make them readable (chmod u+rx) or remove them]")
            if used.entries > self.workspace_cap_files:
                output += (f"\n[error: the workspace holds over {used.entries} files and directories, more than its "
                           f"cap of {self.workspace_cap_files}: remove files (the grader copies only the editable "
                           f"files)]")
        return output

    def _execute_action(self, act: Action) -> str:
        self.task_format.check_action(self.task, act.kind)
        if act.kind in ("shell", "profile", "bench"):  # code of the agent's: never beside the baseline's observation
            self.grader.wait_for_baseline()
        if act.kind == "shell":
            return self.sandbox.run(act.cmd).describe()
        if act.kind == "submit":
            return "submitted"
        if act.kind == "profile":
            n = len(self.task.configs_for(self.hardware.interpreter))
            if act.config >= n:
                raise ActionError(f"config {act.config} does not exist; seen configs are 0..{n - 1} (configs.json)")
            return self.sandbox.run(["python", "profile.py", "--config", str(act.config)]).describe()
        if act.kind == "bench":
            return self.sandbox.run(["python", "bench.py"]).describe()
        path = resolve_in_workspace(self.workspace, act.path)
        rel = path.relative_to(os.path.realpath(self.workspace))
        if act.kind == "read_file":
            return _read_capped(path, rel, MAX_OBS_CHARS)
        if act.kind == "write_file":
            if path.is_dir():
                raise ActionError(f"{rel}: is a directory")
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_nofollow(path, act.content)
            return f"wrote {len(act.content)} characters to {rel}"
        # edit_file
        text = _read_capped(path, rel, MAX_FILE_CHARS, refuse_longer=True)
        count = text.count(act.old)
        if count != 1:
            hint = ("it does not occur: copy it exactly from read_file (whitespace included)" if count == 0 else
                    "include more surrounding lines to make it unique")
            raise ActionError(f"{rel}: `old` must occur exactly once, found {count} occurrences; {hint}")
        _write_nofollow(path, text.replace(act.old, act.new, 1))
        return f"edited {rel}: replaced {len(act.old)} characters with {len(act.new)}"

    def _grade(self) -> Grade:
        grade = self.grader.grade(self.workspace, seed=self._grading_seed)
        if is_infra_fault(grade.outcome):
            # The machine failed before any candidate code ran (so the seed is still unseen): grade once more, in a
            # fresh process; a second fault stands, as infra_fault, never as the kernel's failure.
            grade = self.grader.grade(self.workspace, seed=self._grading_seed)
        return grade

    def _info(self, kind: str, error: str, grade: Grade | None) -> dict[str, Any]:
        return {"task": self.task.env_id, "hardware": self.hardware.id, "step": getattr(self, "steps", 0),
                "action_kind": kind, "action_error": error,
                "elapsed_s": time.monotonic() - getattr(self, "start_time", time.monotonic()),
                "workspace": str(self.workspace), "grade": grade.to_dict() if grade else {}}


def _open_regular(path: Path, rel: Path, flags: int) -> int:
    # O_NOFOLLOW: a symlink swapped in as the final component cannot redirect the action out of the workspace.
    # O_NONBLOCK: a FIFO planted by a shell command cannot hang the env; then only regular files are accepted.
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except FileNotFoundError:
        raise ActionError(f"{rel}: no such file in the workspace") from None
    except OSError as e:
        raise ActionError(f"{rel}: cannot open ({e.strerror}); file actions work on regular files only") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ActionError(f"{rel}: not a regular file; file actions work on regular files only")
    return fd


def _read_capped(path: Path, rel: Path, max_chars: int, refuse_longer: bool = False) -> str:
    """A file's text, at most `max_chars` characters read (a huge file costs no memory)."""
    with os.fdopen(_open_regular(path, rel, os.O_RDONLY), "r", errors="replace") as f:
        text = f.read(max_chars + 1)
    if len(text) > max_chars:
        if refuse_longer:
            raise ActionError(f"{rel}: longer than {max_chars} characters; edit it with a shell command instead")
        text = text[:max_chars] + f"\n[... file longer than {max_chars} characters; cut here ...]"
    return text


def _write_nofollow(path: Path, content: str) -> None:
    fd = _open_regular(path, path.name, os.O_WRONLY | os.O_CREAT)
    with os.fdopen(fd, "w", errors="replace") as f:
        f.truncate(0)
        f.write(content)


def _size(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.1f} MiB"


def _grading_seed(rng: np.random.Generator) -> int:
    """A grading seed drawn from `rng` (the env's np_random, or a copy of it to peek at the next draw)."""
    return int(rng.integers(0, 2**31 - 1))
