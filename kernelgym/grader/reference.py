"""The task's reference outputs, computed by trusted code only: in this process, on the GPU where one grades
(`GraderConfig.references_on_gpu`) and else on the CPU; or, for a task whose reference needs the GPU
(``reference_device: cuda``) where this process cannot use it, in a trusted process of its own that never runs
candidate code.

    python -m kernelgym.grader.reference TASK_DIR JOBS.json OUT.pt [DEVICE]    # the GPU reference process
"""
from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, ContextManager

from kernelgym.errors import TaskSpecError
from kernelgym.grader.cache import GRADING_CACHE
from kernelgym.grader.compare import PreparedReference, prepare_reference, trivial_output_passes
from kernelgym.grader.protocol import load_function, output_key
from kernelgym.task import Task, load_task

def load_reference(task: Task) -> tuple[Callable, Callable]:
    """(reference, input_builder) functions of `task`, imported from the task directory (never a workspace), once
    per process (`GRADING_CACHE.loaded`)."""
    prefix = f"kernelgym_task_{task.spec.language}_{task.spec.id}_"
    return GRADING_CACHE.loaded(f"reference:{task.root}", lambda: tuple(
        load_function(ref, str(task.root), prefix + ref.split(":")[0].removesuffix(".py").replace("/", "_"))
        for ref in (task.spec.reference, task.spec.input_builder)))


def reference_outputs(task: Task, config: dict, seed: int, device: str = "cpu",
                      turn: Callable[[], ContextManager] | None = None) -> tuple:
    """The reference's outputs on `config`'s inputs of `seed`, as a tuple in the task's declared output order. With
    `turn` (a context manager factory: `References.turn`), the inputs are drawn on the CPU (as every builder draws
    them) outside it, then moved to `device` and the reference computed inside it.

    Raises:
        TaskSpecError: the reference returned the wrong number of outputs.
    """
    reference, builder = load_reference(task)
    if turn is None:
        return _declared_outputs(task, reference(*builder(config, seed, device)))
    import torch

    args = builder(config, seed, "cpu")
    with turn():
        return _declared_outputs(task, reference(*[a.to(device) if isinstance(a, torch.Tensor) else a for a in args]))


def _declared_outputs(task: Task, ref) -> tuple:
    """The reference's return value `ref` as a tuple in the task's declared output order (`reference_outputs`)."""
    refs = tuple(ref) if isinstance(ref, (tuple, list)) else (ref,)
    if len(refs) != len(task.spec.outputs):
        raise TaskSpecError(f"{task.root}/task.yaml: the reference returned {len(refs)} outputs; `outputs` declares "
                            f"{len(task.spec.outputs)} ({', '.join(o.name for o in task.spec.outputs)})")
    return refs


def prepare_outputs(task: Task, config: dict, refs: tuple, device: str = "cpu") -> tuple[PreparedReference, ...]:
    """Each reference output prepared for its comparison rule and tolerance on `config`, held on `device` (where
    the candidate's outputs are then compared; off the CPU without its elementwise bound, computed at each
    comparison instead: `prepare_reference`)."""
    return tuple(prepare_reference(r.to(device), task.spec.tolerance_for(o, config), o.rule_for(config),
                                   keep_bound=device == "cpu")
                 for o, r in zip(task.spec.outputs, refs))


def cuda_usable() -> bool:
    """Whether this process can run CUDA work: a GPU is visible and the process was not forked after CUDA started
    in its parent (then CUDA cannot start here)."""
    import torch

    return torch.cuda.is_available() and not torch.cuda._is_in_bad_fork()


def trivial_passes(task: Task, config: dict, prepared: tuple[PreparedReference, ...]) -> list[str]:
    """For each output where an all-zero or constant output would pass on `config`, a message naming it."""
    problems = []
    for o, p in zip(task.spec.outputs, prepared):
        msg = trivial_output_passes(p, o.dtype_for(config), task.spec.tolerance_for(o, config))
        if msg:
            problems.append(f"{task.root}/task.yaml: config {config}, output {o.name!r}: {msg}")
    return problems


class References:
    """The prepared reference outputs of one grading, computed in the background (torch releases the GIL) while the
    candidate runs. The thread is not a daemon: a process that exits while it is inside torch would abort
    (``terminate called without an active exception``, exit 134), so the interpreter waits for it; `cancel` stops
    it after its current job.

    Args:
        task: the task. jobs: (config, seed) pairs to compute. gpu: a GPU is present; with the task's
            ``reference_device: cuda`` the reference then runs on it in a trusted subprocess.
        check_trivial: configs on which an all-zero or constant output passing is a task error (the task's seen
            configs); `get` raises TaskSpecError for them.
        on_gpu: compute the references, and hold them for the comparisons, on the GPU in this process (where
            `cuda_usable`; else on the CPU, as with False). Attribute `device` says where they are.
        turn: a context manager factory held around each reference's work on the GPU (`gpu_schedule.shared_turn`:
            the schedule's shared side, where `GraderConfig.gpu_quiet_turns` asks for it); attribute `turn`, which
            the comparisons on the GPU hold too.
    """

    def __init__(self, task: Task, jobs: list[tuple[dict, int]], gpu: bool = False,
                 check_trivial: list[dict] | None = None, work_dir: Path | None = None, on_gpu: bool = False,
                 turn: Callable[[], ContextManager] = contextlib.nullcontext):
        self.task, self.jobs, self._refs, self.turn = task, jobs, {}, turn
        self.problems: list[str] = []
        self._error: BaseException | None = None
        self._cancelled = threading.Event()
        self._trivial_keys = trivial_keys = {_key(c, 0)[0] for c in (check_trivial or [])}
        self.device = "cuda" if gpu and on_gpu and cuda_usable() else "cpu"
        subprocess_gpu = gpu and task.spec.reference_device == "cuda" and self.device == "cpu"

        self.used_process = False
        """Whether the references came from the trusted GPU reference process (False: computed in this process)."""
        self.computed_s: float | None = None
        """How long computing every job took, s (None until done): diagnosis of where a grading's time goes."""
        started = time.monotonic()

        def work():
            try:
                if subprocess_gpu:
                    try:
                        computed = run_reference_process(task, jobs, Path(work_dir or "."))
                        prepared_all = [prepare_outputs(task, cfg, refs) for (cfg, s), refs in zip(jobs, computed)]
                        self.used_process = True
                    except TaskSpecError:
                        # The GPU failed the process (out of memory: it runs while the agent works, and an agent's
                        # shell command or another env's candidate can fill the GPU): computed on the CPU instead,
                        # slower, where a broken reference raises its own error. The machine's limits, or a policy,
                        # must not fail the task (a TaskSpecError leaves the env's step).
                        prepared_all = [prepare_outputs(task, cfg, reference_outputs(task, cfg, s)) for cfg, s in jobs]
                else:
                    prepared_all = []
                    for cfg, s in jobs:
                        if self._cancelled.is_set():
                            break  # `wait` computes the rest, if the grading is still wanted
                        prepared_all.append(self._prepared(cfg, s))
                for (cfg, s), prepared in zip(jobs, prepared_all):
                    self._store(cfg, s, prepared)
                if self.device != "cpu":
                    import torch

                    # The inputs and fp32 temporaries the references were computed from go back to the driver, for
                    # the candidates' processes on this card: this process's allocator would keep them reserved.
                    torch.cuda.empty_cache()
                if len(prepared_all) == len(jobs):
                    self.computed_s = time.monotonic() - started
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread by get()
                self._error = e
        self._thread = threading.Thread(target=work, name="kernelgym-references", daemon=False)
        self._thread.start()

    def _store(self, config: dict, seed: int, prepared: tuple[PreparedReference, ...]) -> None:
        if _key(config, seed)[0] in self._trivial_keys:
            self.problems += trivial_passes(self.task, config, prepared)
        self._refs[_key(config, seed)] = prepared

    def cancel(self) -> None:
        """Stop computing after the current job (the grading was given up: its worker stopped, the env closed). Does
        not wait; `wait` and `get` still compute what is missing, in the caller's thread."""
        self._cancelled.set()

    def _prepared(self, config: dict, seed: int) -> tuple[PreparedReference, ...]:
        """`config`'s reference outputs on `seed`, prepared on `device`; where the GPU fails them (out of memory beside
        the candidates' processes, a CUDA error), on the CPU instead: the machine's limits must not fail a grading.
        Raises what the reference raises on the CPU."""
        if self.device != "cpu":
            try:
                refs = reference_outputs(self.task, config, seed, self.device, turn=self.turn)
                with self.turn():  # the GPU's schedule, shared side, where quiet turns ask for it
                    return prepare_outputs(self.task, config, refs, self.device)
            except Exception:  # noqa: BLE001 - retried on the CPU, which raises a broken reference's error itself
                import torch

                torch.cuda.empty_cache()
        return prepare_outputs(self.task, config, reference_outputs(self.task, config, seed))

    def wait(self) -> None:
        """Wait until every job is computed.

        Raises:
            TaskSpecError: the reference failed, or a trivial output passes on a checked config.
        """
        self._thread.join()
        if self._error is None:
            try:
                for cfg, s in self.jobs:  # left by `cancel`
                    if _key(cfg, s) not in self._refs:
                        self._store(cfg, s, self._prepared(cfg, s))
            except Exception as e:  # noqa: BLE001 - reported as the background thread's error would be
                self._error = e
        if self._error is not None:
            if isinstance(self._error, TaskSpecError):
                raise self._error
            raise TaskSpecError(f"{self.task.root}: the task's reference failed: {type(self._error).__name__}: "
                                f"{self._error}") from self._error
        if self.problems:
            raise TaskSpecError("a task's tolerance must tell a kernel that computes nothing from one that works:\n"
                                + "\n".join(self.problems))

    def get(self, config: dict, seed: int) -> tuple[PreparedReference, ...]:
        """The prepared outputs of `config` on `seed` (computed now, on `device`, if not among the jobs)."""
        self.wait()
        key = _key(config, seed)
        if key not in self._refs:
            self._refs[key] = self._prepared(config, seed)
        return self._refs[key]

    def elements(self) -> int:
        """Elements of every reference output computed so far (the cap on what the candidate's outputs may unpack to)."""
        self.wait()
        return sum(p.numel() for refs in self._refs.values() for p in refs)


def _key(config: dict, seed: int) -> tuple[str, int]:
    return json.dumps(config, sort_keys=True), seed


def run_reference_process(task: Task, jobs: list[tuple[dict, int]], work_dir: Path, timeout_s: float = 900.0,
                          device: str = "cuda") -> list:
    """The reference outputs of `jobs`, computed on the GPU by a trusted subprocess (this module's ``__main__``); the
    candidate never runs there. Returns one tuple of CPU tensors per job.

    Raises:
        TaskSpecError: the process failed; the message holds its output.
    """
    import torch

    work_dir.mkdir(parents=True, exist_ok=True)
    # A scratch directory of this call's own: gradings whose references overlap in time share `work_dir`, where
    # fixed file names would let one call compute the other's jobs or load its half-written outputs.
    with tempfile.TemporaryDirectory(prefix="reference-", dir=work_dir) as scratch:
        jobs_path, out_path = Path(scratch) / "jobs.json", Path(scratch) / "outputs.pt"
        jobs_path.write_text(json.dumps([[cfg, s] for cfg, s in jobs]))
        run = subprocess.run([sys.executable, "-m", "kernelgym.grader.reference", str(task.root), str(jobs_path),
                              str(out_path), device], capture_output=True, text=True, timeout=timeout_s)
        if run.returncode != 0:
            raise TaskSpecError(f"{task.root}: the reference process failed (exit {run.returncode}):\n"
                                f"{(run.stdout + run.stderr)[-3000:]}")
        saved = torch.load(out_path, weights_only=True)
    return [tuple(saved[output_key(j, o.name)] for o in task.spec.outputs) for j in range(len(jobs))]


def _main(task_dir: str, jobs_path: str, out_path: str, device: str = "cuda") -> None:
    import torch

    task = load_task(task_dir)
    jobs = json.loads(Path(jobs_path).read_text())
    saved = {}
    for j, (cfg, seed) in enumerate(jobs):
        for o, r in zip(task.spec.outputs, reference_outputs(task, cfg, seed, device)):
            saved[output_key(j, o.name)] = r.detach().to("cpu")
    torch.save(saved, out_path)


if __name__ == "__main__":
    _main(*sys.argv[1:5])
