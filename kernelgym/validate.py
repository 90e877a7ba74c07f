"""``kernelgym validate TASK_DIR``: checks a task folder before anyone trains on it.

Each check is named and returns passed / failed / not run, with a message:

1. ``task.yaml loads``: the spec validates and the files it names exist.
2. ``name is unique``: no other task on the search path has the same name.
3. ``hardware``: the hardware profile (detected, or asked for) can grade the task's language, and the task does not
   declare it unsupported (``unsupported_hardware``: then this check is not run, with the task's reason, and the
   baseline is not graded).
4. ``reference is not trivial``: on every config this hardware grades, the reference runs, gives a finite tensor
   that depends on the inputs, and neither all zeros nor a constant (the reference's mean) passes the task's
   tolerance against it (constant or zero outputs clearing a loose tolerance is a known exploit).
5. ``unseen configs``: the public generator yields valid configs for this hardware and the reference runs on each.
6. ``baseline is correct``: the pristine task folder, graded as a submission (sandboxed), compiles and is correct
   on every seen config.

The grader, reference loader, comparison and unseen generator are called through the small wrappers below
(`_reference_outputs`, `_trivial_passes`, `_generate_unseen`, `_config_violations`, `_grade_baseline`): the one
place to adapt when those APIs change.
"""
from __future__ import annotations

import tempfile
import traceback
from pathlib import Path
from typing import Callable

from kernelgym.backends import get_backend
from kernelgym.checks import Check
from kernelgym.discovery import Dirs, discover_tasks_report, task_search_path
from kernelgym.errors import KernelGymError
from kernelgym.hardware import HardwareProfile, detect_profile

from kernelgym.task import Task, load_task

SEED = 0
#: A second input seed: the reference must give a different output on it (an output ignoring the inputs is trivial).
OTHER_SEED = 1


# -- wrappers over APIs that are being redesigned: adapt here ---------------------------------------------------
def _reference_outputs(task: Task, config: dict, seed: int, device: str) -> tuple:
    """The reference's outputs (a tuple, in the task's declared order) on `config`'s inputs for `seed`."""
    from kernelgym.grader import reference
    if hasattr(reference, "reference_outputs"):  # tasks with several declared outputs
        return reference.reference_outputs(task, config, seed, device)
    ref, builder = reference.load_reference(task)
    return (ref(*builder(config, seed, device)),)


def _trivial_passes(task: Task, config: dict, refs: tuple) -> list[str]:
    """For each output, a message where an all-zero or a constant output (the reference's mean) passes the grader's
    comparison on `config`; empty when neither does."""
    from kernelgym.grader import reference
    if hasattr(reference, "trivial_passes"):  # the grader's own test, so validate and grading agree
        return reference.trivial_passes(task, config, reference.prepare_outputs(task, config, refs))
    import torch
    from kernelgym.grader.compare import compare_outputs
    tol, (ref,) = task.spec.tolerance[config["dtype"]], refs
    out = []
    for label, value in (("an all-zero output", 0.0), ("a constant output (the reference's mean)",
                                                        float(ref.double().mean()))):
        fake = torch.full(tuple(ref.shape), value, dtype=getattr(torch, config["dtype"]))
        if compare_outputs(fake, ref, config, tol)[0]:
            out.append(f"config {config}: {label} passes the tolerance {tol}")
    return out


def _generate_unseen(task: Task, interpreter: bool, validate: Callable[[dict], str | None]
                     ) -> tuple[list[dict], list[str]]:
    """(configs, log) from the public unseen-config generator, for this kind of hardware."""
    from kernelgym.unseen.generator import generate_unseen_configs
    return generate_unseen_configs(task, seed=SEED, interpreter=interpreter, validate=validate)


def _config_violations(task: Task, config: dict) -> list[str]:
    """The rules of the task's config space that `config` breaks (empty when valid)."""
    from kernelgym.config_space import violations
    return violations(task.spec.config_space, config)


def _grade_baseline(task: Task, hardware: HardwareProfile, work_dir: Path, sandbox: str) -> tuple[bool, str]:
    """Grade the pristine task folder as a submission (compile and correctness only): (correct, report)."""
    from kernelgym.grader import Grader, GraderConfig
    # A torch2* task's baseline is the PyTorch module (the time to beat, not an answer): the static check and the
    # observer (and the dynamic check, where no observer runs) refuse its library work by design, so validate grades it
    # without them.
    from_torch = task.spec.kind.startswith("torch2")
    config = GraderConfig(sandbox=sandbox, warm_worker=False, measure=False,
                          **({"static_check": False, "dynamic_check": False, "observer": "off"} if from_torch else {}))
    grade = Grader(task, hardware, work_dir, config).grade(task.root, seed=SEED)
    return grade.correct, grade.summary()


# -- the checks --------------------------------------------------------------------------------------------------
def _error(e: BaseException, task: Task) -> str:
    """`e` as one line, with the innermost line of the task's own code that raised it."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve().is_relative_to(task.root)]
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{type(e).__name__}: {e}{where}"


def _run_reference(task: Task, config: dict, seed: int, device: str) -> tuple:
    """The reference's outputs on `config`'s inputs for `seed`, made and computed on `device` (on a GPU: the
    reference must not mix in tensors it makes on the CPU), returned on the CPU; raises ValueError unless each is a
    non-empty tensor with finite values."""
    import torch
    outs = _reference_outputs(task, config, seed, device)
    for i, out in enumerate(outs):
        what = f"output {i}" if len(outs) > 1 else "output"
        if not isinstance(out, torch.Tensor):
            raise ValueError(f"the reference's {what} is a {type(out).__name__}, not a tensor")
        if out.numel() == 0:
            raise ValueError(f"the reference's {what} is an empty tensor of shape {tuple(out.shape)}")
        if out.is_floating_point() and not bool(torch.isfinite(out).all()):
            raise ValueError(f"the reference's {what} has NaN or Inf values")
    return tuple(out.detach().cpu() for out in outs)


def check_reference(task: Task, hardware: HardwareProfile) -> Check:
    """The reference is not trivial on any config this hardware grades (see the module docstring)."""
    import torch
    name = "reference is not trivial"
    configs = task.configs_for(hardware.interpreter)
    device = "cpu" if hardware.interpreter else "cuda"
    for config in configs:
        try:
            refs = _run_reference(task, config, SEED, device)
            trivial = _trivial_passes(task, config, refs)
            others = _run_reference(task, config, OTHER_SEED, device)
        except Exception as e:  # noqa: BLE001 - the task's own code: any error is a finding, not a crash
            return Check(name, False, f"{config}: {_error(e, task)}")
        if trivial:
            return Check(name, False, "\n".join(trivial) + "\nThe reference's values are constant, or too small for "
                                      "the tolerance: tighten the tolerance or scale the inputs.")
        if all(a.shape == b.shape and torch.equal(a, b) for a, b in zip(refs, others)):
            return Check(name, False, f"{config}: the reference gives the same output for inputs of seed {SEED} "
                                      f"and seed {OTHER_SEED}; it must depend on its inputs")
    return Check(name, True, f"{len(configs)} configs: the reference runs and depends on its inputs; all-zero and "
                             f"constant outputs fail")


def check_unseen(task: Task, hardware: HardwareProfile) -> Check:
    """The unseen-config generator yields valid configs for this hardware, and the reference runs on each."""
    name = "unseen configs"
    device = "cpu" if hardware.interpreter else "cuda"

    def runs(config: dict) -> str | None:
        try:
            _run_reference(task, config, SEED, device)
        except Exception as e:  # noqa: BLE001 - the config is rejected and the generator draws another
            return _error(e, task)
        return None

    try:
        configs, log = _generate_unseen(task, hardware.interpreter, runs)
    except Exception as e:  # noqa: BLE001 - TaskSpecError (no valid config at all) or the task's own code failing
        return Check(name, False, f"the generator failed: {_error(e, task)}")
    if not configs:
        return Check(name, False, "the generator yielded no configs")
    for config in configs:
        broken = _config_violations(task, config)
        if broken:
            return Check(name, False, f"{config}: outside the config space: {'; '.join(broken)}")
        reason = runs(config)
        if reason:
            return Check(name, False, f"{config}: the reference fails: {reason}")
    categories = sorted({c.get("category", "?") for c in configs})
    replaced = (f"; {len(log)} draws replaced, e.g. {log[0]}" + (f" (and {len(log) - 1} more)" if len(log) > 1 else "")
                if log else "")
    return Check(name, True, f"{len(configs)} valid configs ({', '.join(categories)}); the reference runs on "
                             f"each{replaced}")


def check_baseline(task: Task, hardware: HardwareProfile, sandbox: str) -> Check:
    """The pristine baseline compiles and is correct on every seen config, graded as a submission."""
    name = "baseline is correct"
    with tempfile.TemporaryDirectory(prefix="kernelgym-validate-") as tmp:
        try:
            correct, report = _grade_baseline(task, hardware, Path(tmp), sandbox)
        except KernelGymError as e:  # e.g. the sandbox cannot start here; the message says how to fix it
            return Check(name, False, str(e))
    n = len(task.configs_for(hardware.interpreter))
    return Check(name, True, f"compiles and is correct on all {n} configs") if correct else Check(name, False, report)


def check_baseline_builds(task: Task, sandbox: str) -> Check:
    """The pristine baseline of a compiled language builds (compile-only where torch has no CUDA); its correctness
    is not checked (no device here)."""
    from kernelgym.grader import build as builds
    name = "baseline builds"
    result = builds.build(get_backend(task.spec.language), task.root, task.spec.editable_files, task.spec.entry_point,
                          sandbox=sandbox)
    if not result.ok:
        return Check(name, False, result.log[-3000:])
    only = (result.directory / "COMPILE_ONLY").is_file()
    return Check(name, True, ("compiled, not linked (this torch has no CUDA)" if only else "built")
                 + ("; from the cache" if result.cached else "") + "; correctness not checked without a GPU")


def check_unique_name(task: Task, tasks_dir: Dirs) -> Check:
    """No other task on the search path (built-in, $KERNELGYM_TASKS_PATH, `tasks_dir`) has `task`'s name."""
    tasks, problems = discover_tasks_report(task_search_path(tasks_dir))
    # Both sides of a clash fail: the task that was found first, and the one refused for reusing its name.
    others = [t.root for t in tasks.values() if t.name == task.name] + \
        [p.path.parent for p in problems if p.kind == "duplicate" and p.name == task.name]
    others = [o for o in others if o != task.root]
    if others:
        return Check("name is unique", False, f"task name {task.name!r} is also used by the task at {others[0]}; "
                                              f"task names must be unique on the search path: change one `id`")
    return Check("name is unique", True, f"{task.name} ({task.env_id})")


def validate_task(task_dir: str | Path, hardware: str | HardwareProfile | None = None, sandbox: str = "bwrap",
                  tasks_dir: Dirs = None, progress: Callable[[str], None] | None = None) -> list[Check]:
    """Run every check on the task in `task_dir` (see the module docstring).

    Args:
        task_dir: the folder holding task.yaml (or a reference-format folder holding config.yaml:
            kernelgym/reference_tasks/validate.py checks it).
        hardware: a hardware profile or its id; None detects the running device (the CPU interpreter without a GPU).
        sandbox: how the baseline is graded: "bwrap" (default) or "none".
        tasks_dir: the user's task folders, for the name check (besides built-ins and $KERNELGYM_TASKS_PATH).
        progress: called with a short line before each slow step.

    Returns:
        One `Check` per check, in order; a check that needs the task or the hardware is not run (passed None)
        when that failed. Never raises for a problem of the task.
    """
    from kernelgym.reference_tasks.spec import is_reference_task_dir
    if is_reference_task_dir(task_dir):  # the reference arena's format (config.yaml): its own checks
        from kernelgym.reference_tasks.validate import validate_reference_task
        return validate_reference_task(task_dir, hardware=hardware, sandbox=sandbox, progress=progress)
    say = progress or (lambda _: None)
    names = ("name is unique", "hardware", "reference is not trivial", "unseen configs", "baseline is correct")
    say("loading task.yaml")
    try:
        task = load_task(task_dir)
    except KernelGymError as e:
        return [Check("task.yaml loads", False, str(e))] + [Check(n, None, "not run: task.yaml does not load")
                                                            for n in names]
    checks = [Check("task.yaml loads", True, f"{task.env_id}: {task.spec.kind}, editable {task.spec.editable_files}"),
              check_unique_name(task, tasks_dir)]
    try:
        hw = hardware if isinstance(hardware, HardwareProfile) else detect_profile(hardware)
    except KernelGymError as e:
        return checks + [Check("hardware", False, str(e))] + [Check(n, None, "not run: no hardware profile")
                                                               for n in names[2:]]
    if not hw.supports(task.spec.language):
        if not hw.interpreter or not get_backend(task.spec.language).BUILDS:
            return checks + [Check("hardware", False, f"{hw.name} ({hw.vendor}) cannot run {task.spec.language} "
                                                      f"tasks; validate on a device that can (--hardware)")] + \
                [Check(n, None, f"not run: {task.spec.language} does not run on {hw.id}") for n in names[2:]]
        # No GPU here, but a compiled language's baseline can still be built (compile-only where torch has no
        # CUDA) and its reference run on the CPU: everything but the baseline's correctness is checked.
        checks.append(Check("hardware", None, f"{hw.name} cannot run {task.spec.language} kernels: the reference and "
                                              f"the unseen configs are checked on the CPU, the baseline only built"))
        say("running the reference on the CPU")
        checks.append(check_reference(task, hw))
        say("generating unseen configs and running the reference on them")
        checks.append(check_unseen(task, hw))
        say("building the baseline (this takes a minute or two the first time)")
        checks.append(check_baseline_builds(task, sandbox))
        return checks
    reason = task.unsupported_reason(hw)
    if reason:  # the task's own declaration: its reference and unseen configs are still checked here
        checks.append(Check("hardware", None, f"{reason}; the reference and the unseen configs are checked, the "
                                              f"baseline is not graded"))
        checks.append(check_reference(task, hw))
        checks.append(check_unseen(task, hw))
        return checks + [Check("baseline is correct", None, f"not run: {reason}")]
    checks.append(Check("hardware", True, f"{hw.name}" + (" (correctness only)" if hw.interpreter else "")))
    n = len(task.configs_for(hw.interpreter))
    say(f"running the reference on {n} configs")
    checks.append(check_reference(task, hw))
    say("generating unseen configs and running the reference on them")
    checks.append(check_unseen(task, hw))
    say(f"grading the baseline on {n} configs (compile and correctness; sandbox {sandbox})")
    checks.append(check_baseline(task, hw, sandbox))
    return checks
