"""Command line: ``kernelgym list``, ``kernelgym run --task triton-softmax --policy tuner``,
``kernelgym validate TASK_DIR``, ``kernelgym unseen RUN_DIR``, ``kernelgym export RUN_DIR --minari ID``,
``kernelgym report RUN_DIR...`` and ``kernelgym compare RUN_A RUN_B`` (the last two: kernelgym/report/commands.py).

User folders join the built-in ones through ``--tasks-dir`` / ``$KERNELGYM_TASKS_PATH``, ``--policies-dir`` /
``$KERNELGYM_POLICIES_PATH`` and ``--hardware-dir`` / ``$KERNELGYM_HARDWARE_PATH`` (each flag may be repeated).
"""
from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelgym.errors import KernelGymError

class _Console(Console):
    """Rich's console, except that a closed stdout raises BrokenPipeError (`main` exits 141 on it, as for the
    markdown table) instead of Rich's own exit code 1."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError("stdout closed")


# A fixed width when not on a terminal, so tables in logs are not cut at 80 columns.
console = _Console(width=None if sys.stdout.isatty() else 200)


def _source(path: Path, builtin_root: Path) -> str:
    """'built-in' for a file shipped with the package, else its path."""
    return "built-in" if Path(path).resolve().is_relative_to(builtin_root) else str(path)


def cmd_list(args: argparse.Namespace) -> int:
    from kernelgym.discovery import discover_tasks_report, is_builtin, task_search_path
    from kernelgym.hardware import DEFAULT_HARDWARE_ROOT, discover_profiles, hardware_search_path
    from kernelgym.policy import DEFAULT_POLICIES_ROOT, discover_policies, policy_requirements, requirement_met

    profiles, profile_problems = discover_profiles(hardware_search_path(args.hardware_dir))
    tasks, task_problems = discover_tasks_report(task_search_path(args.tasks_dir))
    if args.format == "markdown":
        print(tasks_markdown(tasks, profiles))
        for p in task_problems:  # on stderr: stdout stays the table (the README's task table is this output)
            print(f"broken task, not registered: {p.message}", file=sys.stderr)
        from kernelgym.reference_tasks import discover_reference_tasks
        from kernelgym.reference_tasks.spec import reference_search_path
        reference = discover_reference_tasks(reference_search_path(args.tasks_dir))[0]
        if reference:
            print(f"{len(reference)} reference-format task(s) are not in this table (it lists task.yaml tasks); "
                  f"`kernelgym list` without --format shows them", file=sys.stderr)
        return 0
    # The env id holds the task name; `--task` and `validate` take either.
    table = Table(title="Tasks", title_justify="left", caption="configs: seen on a GPU / on the CPU interpreter",
                  caption_justify="left")
    for col in ("env id", "kind", "language", "difficulty", "configs", "hardware", "source"):
        table.add_column(col, overflow="fold", no_wrap=col in ("env id", "kind"))
    for task in tasks.values():
        supported = [p.id for p in profiles.values()
                     if p.supports(task.spec.language) and not task.unsupported_reason(p)]
        table.add_row(task.env_id, task.spec.kind, task.spec.language,
                      str(getattr(task.spec, "difficulty", None) or "-"),
                      f"{len(task.configs_for(False))}/{len(task.configs_for(True))}",
                      ", ".join(supported) or "(none)", "built-in" if is_builtin(task) else str(task.root))
    console.print(table)
    reference_tables(args.tasks_dir, profiles)
    if task_problems:
        broken = Table(title=f"Broken tasks ({len(task_problems)}, not registered)", title_justify="left",
                       title_style="bold red")
        broken.add_column("path", overflow="fold")
        broken.add_column("error", overflow="fold")
        for p in task_problems:
            broken.add_row(str(p.path), p.message)
        console.print(broken)

    folders, policy_problems = discover_policies(args.policies_dir)
    table = Table(title="Policies", title_justify="left")
    table.add_column("policy")
    table.add_column("needs", overflow="fold")
    table.add_column("source", overflow="fold")
    for name, folder in folders.items():
        needs = [r if requirement_met(r) is not False else f"{r} [red](missing)[/]"
                 for r in policy_requirements(folder)]
        table.add_row(name, ", ".join(needs) or "-", _source(folder, DEFAULT_POLICIES_ROOT))
    console.print(table)
    console.print("[dim]needs: env:VAR (an environment variable, e.g. an API key), binary:NAME (a program on "
                  "PATH), python:MODULE (pip install 'kernelgym\\[agents]' for the API policies)[/]", soft_wrap=True)

    table = Table(title="Hardware profiles", title_justify="left")
    for col in ("profile", "name", "vendor", "arch", "source"):
        table.add_column(col, overflow="fold")
    for pid, prof in profiles.items():
        table.add_row(pid, prof.name, prof.vendor, prof.arch, _source(prof.source, DEFAULT_HARDWARE_ROOT))
    console.print(table)
    for message in policy_problems + [m for _, m in profile_problems]:
        console.print(f"[red]skipped:[/] {escape(message)}", soft_wrap=True)
    return 0


def reference_tables(tasks_dir, profiles: dict) -> None:
    """The reference-format task folders (config.yaml; kernelgym/reference_tasks) under `tasks_dir` and
    $KERNELGYM_TASKS_PATH: the profiles each runs on, and why not on the others; then the broken ones."""
    from kernelgym.reference_tasks import discover_reference_tasks, unsupported_reason
    from kernelgym.reference_tasks.spec import reference_search_path
    tasks, problems = discover_reference_tasks(reference_search_path(tasks_dir))
    if tasks:
        table = Table(title="Reference-format tasks (config.yaml, graded by their own commands)", title_justify="left")
        for col in ("env id", "task type", "editable", "hardware", "unsupported", "source"):
            table.add_column(col, overflow="fold", no_wrap=col == "env id")
        for task in tasks.values():
            reasons = {pid: unsupported_reason(task, p) for pid, p in profiles.items()}
            by_reason: dict[str, list[str]] = {}
            for pid, why in reasons.items():
                if why:
                    by_reason.setdefault(why, []).append(pid)
            table.add_row(task.env_id, task.spec.task_type, ", ".join(task.spec.source_file_path),
                          ", ".join(pid for pid, why in reasons.items() if not why) or "(none)",
                          escape("\n".join(f"{', '.join(ids)}: {why}" for why, ids in by_reason.items())) or "-",
                          str(task.root))
        console.print(table)
    for p in problems:
        console.print(f"[red]reference task skipped:[/] {escape(p.message)}", soft_wrap=True)


def tasks_markdown(tasks: dict, profiles: dict) -> str:
    """The tasks as a Markdown table: env id, kind, language, difficulty, and the hardware profiles that can grade
    each (by its language's backend). README.md holds this table between its ``tasks:`` markers
    (tests/test_readme.py checks that they agree)."""
    def cell(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")
    rows = ["| env id | kind | language | difficulty | hardware |", "|---|---|---|---|---|"]
    for task in tasks.values():
        supported = [p.id for p in profiles.values()
                     if p.supports(task.spec.language) and not task.unsupported_reason(p)]
        rows.append(f"| `{cell(task.env_id)}` | {cell(task.spec.kind)} | {cell(task.spec.language)} | "
                    f"{cell(task.spec.difficulty or '-')} | {cell(', '.join(supported) or '(none)')} |")
    return "\n".join(rows)


#: The `run` settings saved in a run directory (RUN_SETTINGS) and taken back by `--resume`.
RUN_SETTINGS = "run.json"
_RESUMED = ("task", "policy", "policy_config", "seed", "max_steps", "max_wall_s", "hardware", "warmup", "reps",
            "rounds", "command_timeout_s", "no_sandbox", "tasks_dir", "policies_dir", "hardware_dir")


def _resume(args: argparse.Namespace) -> tuple[Path, list[dict]]:
    """The run directory `args.resume` and the results of its finished episodes; `args` takes the run's settings
    (run.json), and `--episodes` its count unless given.

    Raises:
        KernelGymError: not a run directory written by `kernelgym run`.
    """
    run_dir = Path(args.resume)
    try:
        saved = json.loads((run_dir / RUN_SETTINGS).read_text())
    except (OSError, ValueError) as e:
        raise KernelGymError(f"--resume {run_dir}: not a run directory of `kernelgym run` (no readable "
                             f"{RUN_SETTINGS}: {e})") from None
    for key in _RESUMED:
        setattr(args, key, saved.get(key, getattr(args, key)))
    if args.episodes is None:
        args.episodes = saved.get("episodes", 1)
    elif args.episodes != saved.get("episodes", 1):
        console.print(f"[yellow]--episodes {args.episodes}: the run had {saved.get('episodes', 1)}; it now has "
                      f"{args.episodes} (run.json is rewritten)[/]")
    try:
        results = json.loads((run_dir / "results.json").read_text())
    except (OSError, ValueError):
        results = []  # killed before its first episode ended
    return run_dir, results if isinstance(results, list) else []


def _absolute_paths(args: argparse.Namespace) -> None:
    """Make the search folders, and `--task` where it names a folder, absolute paths in `args`."""
    for key in ("tasks_dir", "policies_dir", "hardware_dir"):
        if getattr(args, key, None):
            setattr(args, key, [str(Path(d).resolve()) for d in getattr(args, key)])
    if Path(args.task).is_dir():
        args.task = str(Path(args.task).resolve())


DEFAULT_TASK = "triton-rmsnorm"
DEFAULT_POLICY = "tuner"
_PATTERN_CHARS = set("*?[")


def select_tasks(selectors: list[str], tasks_dir, hardware) -> tuple[list[str], list[str]]:
    """The tasks `kernelgym run --task` names, in order, without repeats: each selector is a task name, env id or
    task folder, kept as given; or a shell-style pattern (``triton-*``, ``*softmax*``, ``all``) matched against the
    names of the tasks on the search path (kernelgym's and the reference format's), of which those `hardware`
    cannot run are left out. Returns (names, one line per task left out, with the reason).

    Raises:
        KernelGymError: a pattern matches no task.
    """
    from kernelgym.discovery import discover_tasks, task_search_path
    from kernelgym.reference_tasks import discover_reference_tasks, unsupported_reason
    from kernelgym.reference_tasks.spec import ReferenceTask, reference_search_path

    chosen: list[str] = []
    skipped: list[str] = []
    catalogue = None
    for selector in selectors:
        if not (_PATTERN_CHARS & set(selector) or selector == "all"):
            chosen += [selector] if selector not in chosen else []
            continue
        if catalogue is None:
            catalogue = {**{t.name: t for t in discover_tasks(task_search_path(tasks_dir)).values()},
                         **discover_reference_tasks(reference_search_path(tasks_dir))[0]}
        pattern = "*" if selector == "all" else selector.removeprefix("KernelArena/")
        matched = sorted(name for name, t in catalogue.items()
                         if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(t.env_id.split("/")[-1], pattern))
        if not matched:
            raise KernelGymError(f"--task {selector!r} matches no task on the search path; `kernelgym list` shows them")
        for name in matched:
            task = catalogue[name]
            if isinstance(task, ReferenceTask):
                why = unsupported_reason(task, hardware)
            elif not hardware.supports(task.spec.language):
                why = f"it is a {task.spec.language} task"
            else:
                why = task.unsupported_reason(hardware)
            if why:
                line = f"{name}: not run on {hardware.id}: {why}"
                skipped += [line] if line not in skipped else []
            elif name not in chosen:
                chosen.append(name)
    return chosen, skipped


def cmd_run(args: argparse.Namespace) -> int:
    """`kernelgym run`: one task with one policy (or a `--resume`d run) as before; several tasks (`--task` repeated, or
    a pattern) or policies (`--policy` repeated), every policy on every task, one run after another, each in its own
    run directory, then a table of all of them. Before the first of several runs every policy is checked
    (`preflight`); a problem stops the whole command unless `--keep-going` is given."""
    if getattr(args, "backend", "local") == "ray":
        from kernelgym.distributed.backend import run_on_ray
        return run_on_ray(args, sys.modules[__name__])
    if getattr(args, "address", None) or getattr(args, "num_envs", None):
        raise KernelGymError("--address and --num-envs are options of --backend ray")
    if args.resume:
        return run_task(args)[0]
    from kernelgym.hardware import detect_profile

    hardware = detect_profile(args.hardware, root=hardware_roots(args))
    selectors, policies = args.task or [DEFAULT_TASK], list(dict.fromkeys(args.policy or [DEFAULT_POLICY]))
    names, skipped = select_tasks(selectors, args.tasks_dir, hardware)
    if len(names) == 1 and not skipped and len(selectors) == 1 and len(policies) == 1:
        return run_task(argparse.Namespace(**{**vars(args), "task": names[0], "policy": policies[0]}))[0]
    for line in skipped:
        console.print(f"[yellow]skipped:[/] {escape(line)}", soft_wrap=True)
    if not names:
        raise KernelGymError(f"no task of --task {' '.join(selectors)} runs on {hardware.id}")
    configs = policy_configs(args.policy_config, policies)
    preflight(policies, configs, args.policies_dir, keep_going=args.keep_going)
    runs = [(name, policy) for name in names for policy in policies]
    rows, codes = [], []
    for k, (name, policy) in enumerate(runs):
        console.rule(f"run {k + 1}/{len(runs)}: {name} with {policy}")
        try:
            code, results, run_dir = run_task(argparse.Namespace(**{**vars(args), "task": name, "policy": policy,
                                                                     "policy_config": configs[policy]}))
        except KernelGymError as e:  # one run that cannot start does not stop the others
            console.print(f"[red]error:[/] {escape(str(e))}", soft_wrap=True)
            code, results, run_dir = 2, [], None
        codes.append(code)
        rows.append((name, policy, results, run_dir))
    print_runs_table(rows, hardware.interpreter)
    return 2 if 2 in codes else 3 if all(c == 3 for c in codes) else 0


def preflight(policies: list[str], configs: dict[str, str | None], policies_dir, keep_going: bool) -> None:
    """Check every policy of a run of several before its first episode (`kernelgym.policy.policy_problems`: it
    loads with its --policy-config, its API key is set, its agent CLI and modules are found) and print every problem.

    Raises:
        KernelGymError: a problem was found and `keep_going` is false (exit 2, nothing run). With `keep_going`
            the runs start anyway, and a policy that cannot start fails its own runs only.
    """
    from kernelgym.policy import policy_problems

    problems: list[str] = []
    for policy in policies:
        try:
            overrides = json.loads(configs[policy]) if configs[policy] else {}
        except ValueError as e:
            problems.append(f"policy {policy!r}: --policy-config is not valid JSON ({e})")
            continue
        if not isinstance(overrides, dict):
            problems.append(f"policy {policy!r}: --policy-config must be a JSON object of config fields")
            continue
        problems += policy_problems(policy, policies_dir, **overrides)
    if not problems:
        return
    for line in problems:
        console.print(f"[red]problem:[/] {escape(line)}", soft_wrap=True)
    if not keep_going:
        raise KernelGymError(f"{len(problems)} problem(s) with the policies, listed above: nothing was run. Fix them, "
                             f"or give --keep-going to run anyway (the runs of a policy that cannot start fail, the "
                             f"others go on)")
    console.print(f"[yellow]--keep-going: running anyway, despite {len(problems)} problem(s)[/]")


def policy_configs(text: str | None, policies: list[str]) -> dict[str, str | None]:
    """`--policy-config` for each of `policies` (JSON text, or None): with one policy, the text itself; with several,
    the text is an object keyed by policy name (``{"scripted": {"actions": []}}``), and a policy it leaves out keeps
    its own config.

    Raises:
        KernelGymError: with several policies, the text is not such an object.
    """
    if len(policies) == 1 or text is None:
        return {p: text for p in policies}
    try:
        by_policy = json.loads(text)
    except ValueError as e:
        raise KernelGymError(f"--policy-config is not valid JSON ({e})") from None
    if not (isinstance(by_policy, dict) and set(by_policy) <= set(policies)
            and all(isinstance(v, dict) for v in by_policy.values())):
        raise KernelGymError("with several --policy, --policy-config is a JSON object keyed by policy name, each an "
                             'object of that policy\'s fields, e.g. \'{"scripted": {"actions": []}}\'; '
                             f"the policies: {', '.join(policies)}")
    return {p: json.dumps(by_policy[p]) if p in by_policy else None for p in policies}


def print_runs_table(rows: list[tuple[str, str, list[dict], Path | None]], interpreter: bool) -> None:
    """The table after several runs: per task and policy the episodes, how many compiled and were correct, the mean
    score and mean speedup (n/a on the CPU interpreter, where nothing is timed), the policy's cost, and the run
    directory."""
    table = Table(title="Runs", title_justify="left")
    for col in ("task", "policy", "episodes", "compiled", "correct", "score (mean)", "speedup (mean)", "cost $",
                "run directory"):
        table.add_column(col, justify="left" if col in ("task", "policy", "run directory") else "right",
                         overflow="fold")
    for name, policy, results, run_dir in rows:
        grades = [r["grade"] for r in results]
        speedups = [g["speedup"] for g in grades if g.get("speedup")]
        costs = [(r.get("usage") or {}).get("cost_usd") for r in results]
        table.add_row(name, policy, str(len(results)), str(sum(bool(g.get("compiled")) for g in grades)),
                      str(sum(bool(g.get("correct")) for g in grades)),
                      f"{sum(g.get('score', 0) for g in grades) / len(grades):.1f}" if grades else "-",
                      "n/a (interpreter)" if interpreter else
                      f"{sum(speedups) / len(speedups):.3f}x" if speedups else "-",
                      f"{sum(costs):.4f}" if costs and all(c is not None for c in costs) else "-",
                      str(run_dir) if run_dir else "(not run: see its error above)")
    console.print(table)


def prepare_run(args: argparse.Namespace):
    """What one run of ``kernelgym run`` needs before its first episode, for either backend: the policy (loaded, so
    a bad config is refused now), the task and hardware profile (checked against each other), and the run directory
    (new, or the ``--resume``d one, with its run.json written). Returns (policy, task, hardware, run directory, the
    results of episodes already run).

    Raises:
        KernelGymError: the task, policy, its config or the hardware cannot be used (no run directory is made).
    """
    from kernelgym.policy import load_policy

    results: list[dict] = []
    if args.resume:
        run_dir, results = _resume(args)
    elif args.episodes is None:
        args.episodes = 1
    _absolute_paths(args)  # run.json must name the same folders when resumed from another working directory

    if args.policy_config is not None and not args.policy_config.strip():
        raise KernelGymError("--policy-config is empty; leave it out, or give a JSON object such as '{\"actions\": []}'")
    try:
        overrides = json.loads(args.policy_config) if args.policy_config else {}
    except ValueError as e:
        raise KernelGymError(f"--policy-config is not valid JSON ({e}); expected an object such as "
                             '\'{"actions": []}\'') from None
    if not isinstance(overrides, dict):
        raise KernelGymError("--policy-config must be a JSON object of config fields")
    from kernelgym.hardware import detect_profile

    from kernelgym.task import Task
    from kernelgym.task_format import resolve_task

    policy = load_policy(args.policy, policies_dir=args.policies_dir, **overrides)
    # Resolved here so the user's folders count; the env takes the Task and the profile as they are. A folder in
    # the reference arena's format (config.yaml) is graded by its own commands (kernelgym/reference_tasks).
    task = resolve_task(args.task, tasks_dir=args.tasks_dir)
    hardware = detect_profile(args.hardware, root=hardware_roots(args))
    if isinstance(task, Task):  # refused now, with the reason, before any run directory is made
        if not hardware.supports(task.spec.language):
            raise KernelGymError(f"{task.name} is a {task.spec.language} task, which {hardware.id} cannot run "
                                 f"(pick another task, or run on hardware that supports {task.spec.language})")
        task.require_supported(hardware)
    if not args.resume:
        task_label = Path(args.task).name if Path(args.task).is_dir() else args.task
        label = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{task_label}-{args.policy}")
        run_dir = Path(args.run_dir) / f"{time.strftime('%Y%m%d-%H%M%S')}-{label}"
        run_dir.mkdir(parents=True, exist_ok=True)
        run_dir.chmod(0o700)  # owner-only, as the episodes in it: trajectories hold the task, the model's words, kernels
    (run_dir / RUN_SETTINGS).write_text(json.dumps({**{k: getattr(args, k) for k in _RESUMED},
                                                    "episodes": args.episodes}, indent=1, default=str))
    return policy, task, hardware, run_dir, results


def run_task(args: argparse.Namespace) -> tuple[int, list[dict], Path]:
    """Run `args.episodes` episodes of `args.policy` on the one task `args.task` (or continue `args.resume`) in a run
    directory of its own; returns (exit code, the episodes' results, the run directory).

    Raises:
        KernelGymError: the task, policy, its config or the hardware cannot be used (nothing is run).
    """
    from kernelgym.env import KernelArenaEnv
    from kernelgym.grader import GraderConfig
    from kernelgym.wrappers import TrajectoryRecorder

    policy, task, hardware, run_dir, results = prepare_run(args)
    sandbox = "none" if args.no_sandbox else "bwrap"
    grader = GraderConfig(warmup=args.warmup, reps=args.reps, rounds=args.rounds, sandbox=sandbox)
    env = KernelArenaEnv(task, run_dir=run_dir, hardware=hardware, sandbox=sandbox, max_steps=args.max_steps,
                         max_wall_s=args.max_wall_s, grader=grader, command_timeout_s=args.command_timeout_s)
    env = TrajectoryRecorder(env, run_dir / "trajectories.jsonl")
    hw = env.unwrapped.hardware
    print_run_header(env.unwrapped.task.env_id, args.policy, hw)
    console.print(f"run directory: {run_dir}")
    if results:
        print_resuming(len(results), args.episodes)
    try:
        _run_episodes(args, env, policy, run_dir, results)
    except KeyboardInterrupt:
        print_interrupted([(run_dir, len(results), args.episodes)], backend="local")
        raise
    finally:
        env.close()
    print_results(results, hw.interpreter)
    if hw.interpreter:
        print_interpreter_note(args.policy == "tuner")
    console.print(f"trajectories: {run_dir / 'trajectories.jsonl'}")
    console.print(f"results: {run_dir / 'results.json'}; each episode's final kernel: {run_dir / 'episodes'}/<id>/workspace; "
                  f"charts: kernelgym report {run_dir}")
    if results and all(r.get("policy_error") for r in results):
        console.print("[red]every episode ended with a policy error: the scores are the kernels as they stood[/]")
        return 3, results, run_dir  # a script must not read a run whose policy never worked as a success
    return 0, results, run_dir


def print_run_header(env_id: str, policy: str, hardware) -> None:
    """The line before a run's first episode: its env id, policy and hardware (and, on the CPU interpreter, that
    nothing is timed). `hardware` is a kernelgym.hardware profile."""
    console.print(f"[bold]{env_id}[/] with policy [bold]{policy}[/] on {hardware.name}"
                  + (" [yellow]- correctness only, nothing is timed[/]" if hardware.interpreter else ""))


def print_resuming(done: int, episodes: int) -> None:
    """The line of a `--resume`d run: `done` of its `episodes` finished before, and how many run now."""
    left = episodes - done
    console.print(f"resuming: {done} of {episodes} episode{'' if episodes == 1 else 's'} "
                  f"finished before; " + (f"{left} more run now" if left > 0 else "none is left to run"))


def print_interrupted(runs: list[tuple[Path, int, int]], backend: str) -> None:
    """What an interrupted `kernelgym run` (Ctrl-C, SIGTERM) kept, and the command that resumes each unfinished run;
    `runs` holds (run directory, finished episodes, episodes) and `backend` is ``local`` or ``ray``."""
    flag = " --backend ray" if backend == "ray" else ""
    for run_dir, done, episodes in runs:
        if done < episodes:
            console.print(f"[yellow]interrupted:[/] {done} of {episodes} episode{'' if episodes == 1 else 's'} "
                          f"finished and kept in {run_dir}; resume with `kernelgym run{flag} --resume {run_dir}`",
                          soft_wrap=True)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that `kernelgym run` stops as on Ctrl-C; ``signum`` is the signal."""

    signum = signal.SIGTERM


#: The signals `sigterm_as_interrupt`'s handler took since `main` began: Ray's waits turn the handler's `Terminated`
#: into a plain KeyboardInterrupt, so the exit code is taken from here.
_SIGNALS_TAKEN: list[int] = []


def _raise_terminated(signum, frame):
    _SIGNALS_TAKEN.append(signum)
    raise Terminated()


@contextlib.contextmanager
def sigterm_as_interrupt():
    """While inside: SIGTERM raises `Terminated` in the main thread (as Ctrl-C raises KeyboardInterrupt), so a run
    stops cleanly (its finished episodes written, a resume line, Ray shut down); the handler before is put back after.
    Ray installs its own SIGTERM handler when it starts (it aborts the process), so the Ray backend enters this again
    once connected. Outside the main thread it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before if before is not None else signal.SIG_DFL)


def _run_episodes(args: argparse.Namespace, env, policy, run_dir: Path, results: list[dict]) -> list[dict]:
    """The local backend's episode loop: run the episodes of `args` not in `results` yet, appending each one's
    result (with its seed) to `results` and rewriting results.json after it; returns `results`."""
    from kernelgym.rollout import rollout, write_results

    for ep in range(len(results), args.episodes):
        with console.status(f"episode {ep + 1}/{args.episodes}: starting") as status:
            def on_step(step, action, info):
                kind = action.get("kind") if isinstance(action, dict) else "?"
                status.update(f"episode {ep + 1}/{args.episodes}: step {step}/{args.max_steps} ({kind}), "
                              f"{info['elapsed_s']:.0f} s")
                if kind == "submit" or info.get("grade"):
                    status.update(f"episode {ep + 1}/{args.episodes}: grading")
                if not console.is_terminal:  # no spinner in a log: one line per step instead
                    u = info.get("policy", {}).get("usage")
                    tokens = (f", {u['input_tokens'] + u['cache_write_tokens'] + u['cached_tokens']} tokens in, "
                              f"{u['output_tokens']} out" if u else "")
                    error = info.get("action_error")
                    console.print(f"  step {step}: {kind}{' (graded)' if info.get('grade') else ''}{tokens}"
                                  + (f" [red]malformed: {escape(str(error))[:200]}[/]" if error else ""),
                                  soft_wrap=True)
            results.append({"seed": args.seed + ep, **rollout(env, policy, seed=args.seed + ep,
                                                                on_step=on_step)})
        console.print(f"episode {ep + 1}: reward {results[-1]['reward']:.1f} in {results[-1]['steps']} step{'' if results[-1]['steps'] == 1 else 's'}, "
                      f"{results[-1]['wall_s']:.1f} s")
        if results[-1].get("policy_error"):
            console.print(f"[red]{escape(str(results[-1]['policy_error']))}[/] (the kernel was submitted as it was and "
                          f"graded)", soft_wrap=True)
        write_results(run_dir, results)
    return results


def _int_at_least(text: str, minimum: int, wording: str) -> int:
    """`text` as an integer of at least `minimum` for argparse; `wording` says the bound in the error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"{wording}, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    return _int_at_least(text, 1, "must be at least 1")


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0 (Gymnasium's seeds)."""
    return _int_at_least(text, 0, "must be 0 or more")


def hardware_roots(args: argparse.Namespace):
    """The hardware search path with --hardware-dir folders, or None (the default path) without any."""
    from kernelgym.hardware import hardware_search_path
    return hardware_search_path(args.hardware_dir) if args.hardware_dir else None


def cmd_validate(args: argparse.Namespace) -> int:
    from kernelgym.discovery import discover_tasks_report, parse_task_name, task_search_path
    from kernelgym.hardware import detect_profile
    from kernelgym.validate import validate_task

    task_dir = Path(args.task)
    if not task_dir.is_dir():  # a task name: its folder on the search path, broken ones included
        tasks, problems = discover_tasks_report(task_search_path(args.tasks_dir))
        key = parse_task_name(args.task)[0]
        folders = [t.root for t in tasks.values() if t.name == key] + [p.path.parent for p in problems if p.name == key]
        if not folders:  # a reference-format folder (config.yaml), broken ones included
            from kernelgym.reference_tasks import discover_reference_tasks
            from kernelgym.reference_tasks.spec import reference_search_path
            ref_tasks, ref_problems = discover_reference_tasks(reference_search_path(args.tasks_dir))
            folders = [t.root for t in ref_tasks.values() if t.name == key] + \
                [p.path.parent for p in ref_problems if p.name == key]
        if not folders:
            raise KernelGymError(f"{args.task!r} is neither a directory nor a task name on the search path; "
                                 f"`kernelgym list` shows the tasks")
        task_dir = folders[0]
    hardware = detect_profile(args.hardware, root=hardware_roots(args))
    sandbox = "none" if args.no_sandbox else "bwrap"
    with console.status("validating") as status:
        def progress(line: str) -> None:
            status.update(line)
            if not console.is_terminal:  # no spinner in a log: one line per step instead
                console.print(f"  {line}")
        checks = validate_task(task_dir, hardware=hardware, sandbox=sandbox, tasks_dir=args.tasks_dir,
                               progress=progress)
    table = Table(title=f"Validation of {task_dir}", title_justify="left")
    table.add_column("check")
    table.add_column("result")
    table.add_column("message", overflow="fold")
    marks = {True: "[green]PASS[/]", False: "[red]FAIL[/]", None: "[dim]not run[/]"}
    for c in checks:
        table.add_row(c.name, marks[c.passed], c.message)
    console.print(table)
    failed, not_run = sum(c.passed is False for c in checks), sum(c.passed is None for c in checks)
    if failed:
        console.print(f"[red]{failed} of {len(checks)} checks failed[/]" + (f", {not_run} not run" if not_run else ""))
    elif not_run:
        console.print(f"[green]{len(checks) - not_run} of {len(checks)} checks passed[/], {not_run} not run (see why "
                      f"above)")
    else:
        console.print(f"[green]all {len(checks)} checks passed[/]")
    return 1 if failed else 0


def _tokens_cell(u: dict | None) -> str:
    """'in/out/cached' tokens of an episode's usage totals ('in' counts cache writes; 'cached' is cache reads),
    or '-' when the policy reported none."""
    if not u or u.get("input_tokens") is None:
        return "-"
    prompt = u["input_tokens"] + u.get("cache_write_tokens", 0)
    return f"{prompt}/{u['output_tokens']}/{u['cached_tokens']}"


def print_interpreter_note(tuner: bool) -> None:
    """The line after a run on the CPU interpreter: nothing was timed (and, for the tuner, what ranked its variants)."""
    console.print("[yellow]CPU interpreter: correctness only. Nothing was timed, so no speedup was measured"
                  + (", and the tuner ranked its variants by bench.py's model (bytes and launches counted, time "
                     "estimated for a GPU): an estimate, not a measurement" if tuner else "") + ".[/]")


def print_results(results: list[dict], interpreter: bool) -> None:
    """The result table: per episode the grade, steps and wall time, and the policy's token use, cost and time
    (rollout's ``usage`` totals; '-' for a policy that reports none, 'unpriced' for a model without a price)."""
    table = Table(title="Result")
    for col in ("episode", "compiled", "correct", "speedup (mean)", "speedup (geomean)", "score", "steps", "wall s",
                "tokens in/out/cached", "cost $", "policy s"):
        table.add_column(col, justify="right")
    for i, r in enumerate(results):
        g, u = r["grade"], r.get("usage") or {}
        sp = "n/a (interpreter)" if interpreter else (f"{g['speedup']:.3f}x" if g.get("speedup") else "-")
        geo = "n/a" if interpreter else (f"{g['speedup_geomean']:.3f}x" if g.get("speedup_geomean") else "-")
        cost = ("-" if u.get("input_tokens") is None else "unpriced" if u.get("cost_usd") is None
                else f"{u['cost_usd']:.4f}")
        table.add_row(str(i + 1), str(g.get("compiled")), str(g.get("correct")), sp, geo, f"{g.get('score', 0):.1f}",
                      str(r["steps"]), f"{r['wall_s']:.1f}", _tokens_cell(u), cost,
                      f"{u['policy_wall_s']:.1f}" if u.get("policy_wall_s") is not None else "-")
    console.print(table)
    notes = {r["usage"]["note"] for r in results if (r.get("usage") or {}).get("note")}
    for note in sorted(notes):
        console.print(f"[yellow]cost: {note}[/]", soft_wrap=True)
    if results and results[-1]["grade"].get("configs"):  # a reference-format task's grade has no configs
        console.print(f"Per config, episode {len(results)}:")
        for row in results[-1]["grade"].get("configs", []):
            t = (f"  baseline {row['baseline_ms']:.4f} ms  candidate {row['candidate_ms']:.4f} ms  "
                 f"speedup {row['speedup']:.3f}x" if row.get("speedup") else "")
            console.print(f"  {row['config']}: {'correct' if row.get('correct') else 'WRONG'}{t}")


def cmd_unseen(args: argparse.Namespace) -> int:
    from kernelgym.unseen.replay import replay_run

    with console.status("replaying on unseen configs") as status:
        def progress(k, n, name):
            line = f"episode {k + 1}/{n} ({name}): original and optimized kernels on 8 unseen configs"
            status.update(line)
            if not console.is_terminal:  # no spinner in a log: one line per episode instead
                console.print(f"  {line}")
        try:
            s = replay_run(Path(args.run_dir), seed=args.seed, sandbox="none" if args.no_sandbox else "bwrap",
                           progress=progress)
        except FileNotFoundError as e:
            raise KernelGymError(str(e)) from None
    table = Table(title=f"Unseen configs: {s['episodes']} episodes")
    for col in ("episode", "quadrant", "original passed", "optimized passed", "seen speedup", "unseen speedup"):
        table.add_column(col)
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}x"  # noqa: E731
    for r in s["results"]:
        table.add_row(r["episode"], r.get("claim", r["quadrant"]), f"{r['original_passed']}/{r['n']}", f"{r['optimized_passed']}/{r['n']}",
                      fmt(r["seen_speedup"]), fmt(r["unseen_speedup"]))
    console.print(table)
    console.print("quadrants: " + ", ".join(f"{q} {n}" for q, n in s["quadrants"].items()))
    pct = lambda x: "n/a" if x is None else f"{x:.1%}"  # noqa: E731
    console.print(f"conditional correctness P(optimized correct | original correct): "
                  f"{pct(s['conditional_correctness'])} of tasks, {pct(s['conditional_correctness_configs'])} of configs")
    if s["interpreter"]:
        console.print("[yellow]CPU interpreter: correctness only; unseen speedups not measured.[/]")
    if s.get("partially_covered"):
        gaps = {f"{g.get('region') or 'dtype ' + str(g.get('dtype'))} ({g['reason']})"
                for r in s["results"] for g in r.get("not_covered", [])}
        console.print(f"[yellow]{s['partially_covered']} of {s['episodes']} episodes covered the config space in part; "
                      f"not run: {', '.join(sorted(gaps))}. Their quadrants hold on what was covered only.[/]")
    console.print(f"summary: {Path(args.run_dir) / 'unseen_summary.json'}")
    return 0


def add_search_dirs(parser: argparse.ArgumentParser, policies: bool = True) -> None:
    """--tasks-dir, --policies-dir and --hardware-dir: user folders searched after the built-in ones."""
    parser.add_argument("--tasks-dir", action="append", default=None, metavar="DIR",
                        help="a folder of your own tasks (repeatable; also $KERNELGYM_TASKS_PATH)")
    if policies:
        parser.add_argument("--policies-dir", action="append", default=None, metavar="DIR",
                            help="a folder of your own policies (repeatable; also $KERNELGYM_POLICIES_PATH)")
    parser.add_argument("--hardware-dir", action="append", default=None, metavar="DIR",
                        help="a folder of your own hardware profiles (repeatable; also $KERNELGYM_HARDWARE_PATH)")


def cmd_export(args: argparse.Namespace) -> int:
    """`kernelgym export`: the whole episodes of runs as a Minari dataset (--minari), a Parquet dataset of chat
    conversations (--parquet, kernelgym/export_parquet.py), or both. Paths that are no run directory or
    trajectory file (a shell glob's other matches) are skipped with a warning."""
    from kernelgym.offline import to_minari, trajectory_sources

    if not (args.minari or args.parquet):
        raise KernelGymError("kernelgym export: give --minari DATASET_ID, --parquet DIR, or both")
    paths, skipped = trajectory_sources(args.runs)
    for line in skipped:
        console.print(f"[yellow]skipped:[/] {escape(line)}", soft_wrap=True)
    if not paths:
        raise KernelGymError(f"none of the {len(args.runs)} path(s) is a run directory or trajectory file")
    if args.parquet:
        from kernelgym.export_parquet import to_parquet
        export = to_parquet(paths, args.parquet)
        console.print(f"Parquet dataset [bold]{escape(str(export.path))}[/]: {len(export.rows)} episode"
                      f"{'' if len(export.rows) == 1 else 's'} (one row each: messages, tools, reward, outcome, grade, "
                      f"...)", soft_wrap=True)
        _print_left_out(export.report)
        console.print(f"load it with: datasets.load_dataset('parquet', data_files={str(export.path)!r}, "
                      f"split='train')  (docs/OFFLINE.md)", soft_wrap=True)
    if not args.minari:
        return 0
    env_ids = set()
    for path in paths:  # the env id of each run, from run.json where there is one, for the dataset's description
        try:
            env_ids.add(json.loads((path.parent / RUN_SETTINGS).read_text())["task"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    dataset, report = to_minari(paths, args.minari, data_format=args.data_format,
                                env_id=", ".join(sorted(map(str, env_ids))) or None,
                                algorithm_name=args.algorithm, author=args.author)
    console.print(f"Minari dataset [bold]{escape(args.minari)}[/]: {dataset.total_episodes} episodes, "
                  f"{dataset.total_steps} steps, at {escape(str(dataset.storage.data_path.parent))}")
    _print_left_out(report)
    console.print("load it with: minari.load_dataset(" + repr(args.minari) + ")  (docs/OFFLINE.md)")
    return 0


def _print_left_out(report) -> None:
    """The episodes an export left out (a ReadReport's counts), if any."""
    if report.unfinished or report.failed:
        console.print(f"[yellow]left out: {report.unfinished} unfinished episode(s) (the run was killed), "
                      f"{report.failed} in which the env raised[/]")


def cmd_replay(args: argparse.Namespace) -> int:
    """`kernelgym replay`: re-run a recorded episode's actions (kernelgym/replay.py); exit 0 when its grade came
    back, 1 when not (2, through KernelGymError, for bad input)."""
    from kernelgym.replay import replay_episode

    sandbox = "none" if args.no_sandbox else None
    with console.status(f"replaying episode {args.episode} of {args.trajectory}"):
        result = replay_episode(args.trajectory, args.episode, run_dir=args.run_dir, sandbox=sandbox,
                                tasks_dir=args.tasks_dir)
    table = Table(title=f"Replay of episode {result.episode_id}", title_justify="left")
    for col in ("check", "recorded", "replayed", "result", "note"):
        table.add_column(col, overflow="fold")
    marks = {True: "[green]same[/]", False: "[red]DIFFERENT[/]", None: "[dim]shown[/]"}
    for c in result.checks:
        table.add_row(escape(c.name), escape(str(c.recorded)), escape(str(c.replayed)), marks[c.ok], escape(c.note))
    console.print(table)
    for note in result.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", soft_wrap=True)
    console.print(f"replay: {escape(str(result.replay_dir))}", soft_wrap=True)
    if result.matched:
        console.print("[green]the recorded grade came back[/]")
        return 0
    failed = [c.name for c in result.checks if c.ok is False]
    console.print(f"[red]the grade did not come back: {escape(', '.join(failed))} differ[/]", soft_wrap=True)
    return 1


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `kernelgym` command; returns the exit code (2 for a setup error, with its message)."""
    parser = argparse.ArgumentParser(prog="kernelgym", description="GPU-kernel optimization tasks as Gymnasium envs")
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="list tasks (and broken ones), policies and hardware profiles")
    listing.add_argument("--format", choices=("table", "markdown"), default="table",
                         help="table (default): tasks, broken tasks, policies and hardware profiles; markdown: only "
                         "the tasks table, as Markdown (broken tasks on stderr)")
    add_search_dirs(listing)
    listing.set_defaults(func=cmd_list)
    run = sub.add_parser("run", help="run a policy on a task and grade it")
    run.add_argument("--task", action="append", default=None, metavar="TASK",
                     help=f"task name, env id or task directory (default {DEFAULT_TASK}); repeat it, or give a pattern "
                     "such as 'triton-*' or 'all', to run several tasks one after another, each in its own run "
                     "directory (tasks this hardware cannot run are skipped, with the reason)")
    run.add_argument("--policy", action="append", default=None, metavar="POLICY",
                     help=f"policy name: built-in, or from --policies-dir (see `kernelgym list`; default "
                     f"{DEFAULT_POLICY}); repeat it to run every policy on every task")
    run.add_argument("--policy-config", default=None, help="JSON object of overrides for the policy's config.yaml "
                     "(with several --policy: an object keyed by policy name)")
    run.add_argument("--keep-going", action="store_true", help="with several tasks or policies: start the runs even "
                     "when a policy's check before the first episode fails (API key unset, agent CLI or SDK missing, "
                     "config refused); without it, every problem is listed and nothing runs (exit 2)")
    run.add_argument("--episodes", type=positive_int, default=None, help="episodes in the run (default 1; with "
                     "--resume, the run's own count)")
    run.add_argument("--resume", default=None, metavar="RUN_DIR", help="continue a run killed or stopped before its "
                     "last episode: its settings come from RUN_DIR/run.json, its finished episodes are kept")
    run.add_argument("--seed", type=non_negative_int, default=0, help="seed of the first episode (the next ones "
                     "count up from it)")
    run.add_argument("--max-steps", type=positive_int, default=50)
    run.add_argument("--max-wall-s", type=float, default=3600.0)
    run.add_argument("--hardware", default=None, help="hardware profile id (default: detect)")
    run.add_argument("--warmup", type=int, default=10, help="warm-up runs per config before timing")
    run.add_argument("--reps", type=int, default=100, help="timed runs per config")
    run.add_argument("--run-dir", default=os.environ.get("KERNELGYM_RUN_DIR", "kernelgym-runs"),
                     help="parent folder of run directories (default $KERNELGYM_RUN_DIR or ./kernelgym-runs)")
    run.add_argument("--rounds", type=int, default=10, help="rounds in which baseline and candidate alternate")
    run.add_argument("--command-timeout-s", type=float, default=300.0, help="limit per shell command")
    run.add_argument("--no-sandbox", action="store_true", help="run commands unisolated (only if bubblewrap "
                     "cannot run here; trusted policies only)")
    run.add_argument("--backend", choices=("local", "ray"), default="local", help="local: the episodes one after "
                     "another here; ray: spread over the actors of a Ray cluster, same run directories "
                     "(pip install 'kernelgym[ray]'; docs/DISTRIBUTED.md)")
    run.add_argument("--address", default=None, help="with --backend ray: the cluster to join ('auto', "
                     "'ray://HOST:10001'; default: a local Ray instance)")
    run.add_argument("--num-envs", type=positive_int, default=None, help="with --backend ray: episodes run at once, "
                     "one actor each (default: one per episode, at most the cluster's CPUs)")
    add_search_dirs(run)
    run.set_defaults(func=cmd_run)
    validate = sub.add_parser("validate", help="check a task folder: spec, reference, unseen configs, baseline; "
                              "exit code 1 if a check fails")
    validate.add_argument("task", metavar="TASK_DIR", help="a task folder (holding task.yaml, or the reference format's config.yaml), or a task name")
    validate.add_argument("--hardware", default=None, help="hardware profile id (default: detect)")
    validate.add_argument("--no-sandbox", action="store_true", help="grade the baseline unisolated (trusted tasks "
                          "only, where bubblewrap cannot run)")
    add_search_dirs(validate, policies=False)
    validate.set_defaults(func=cmd_validate)
    unseen = sub.add_parser("unseen", help="replay every final kernel of a finished run on unseen configs")
    unseen.add_argument("run_dir", help="a run directory written by `kernelgym run`")
    unseen.add_argument("--seed", type=int, default=0, help="which set of private unseen configs")
    unseen.add_argument("--no-sandbox", action="store_true", help="run kernels unisolated (trusted kernels only)")
    unseen.set_defaults(func=cmd_unseen)
    export = sub.add_parser("export", help="write the episodes of runs as a dataset: Minari (offline RL) or Parquet (chat messages, for SFT)")
    export.add_argument("runs", nargs="+", metavar="RUN", help="run directories of `kernelgym run`, or trajectory "
                        "JSONL files")
    export.add_argument("--minari", default=None, metavar="DATASET_ID", help="the Minari dataset id to write, e.g. "
                        "kernelgym/rmsnorm/tuner-v0 (under $MINARI_DATASETS_PATH, default ~/.minari/datasets)")
    export.add_argument("--parquet", default=None, metavar="DIR", help="write DIR/train.parquet: one row per episode, "
                        "its messages (chat format, tool calls), tools, reward, outcome and grade (docs/OFFLINE.md)")
    export.add_argument("--data-format", choices=("arrow", "hdf5"), default="arrow",
                        help="Minari's storage (hdf5 needs h5py)")
    export.add_argument("--algorithm", default=None, help="the policy's name, for the dataset's metadata")
    export.add_argument("--author", default=None, help="for the dataset's metadata")
    export.set_defaults(func=cmd_export)
    replay = sub.add_parser("replay", help="re-run a recorded episode's actions in a fresh env and check that its "
                            "grade comes back (exit 0: it did, 1: it did not, 2: bad input)")
    replay.add_argument("trajectory", metavar="TRAJECTORY", help="a run directory of `kernelgym run`, or a "
                        "trajectories.jsonl file")
    replay.add_argument("--episode", type=positive_int, default=1, help="which whole episode of the file, from 1 "
                        "(default 1)")
    replay.add_argument("--run-dir", default=os.path.join(os.environ.get("KERNELGYM_RUN_DIR", "kernelgym-runs"),
                                                          "replays"),
                        help="parent folder of the replay's run directory (default replays/ in $KERNELGYM_RUN_DIR or "
                        "./kernelgym-runs: a glob of the runs, kernelgym-runs/*, then holds no replay)")
    replay.add_argument("--no-sandbox", action="store_true", help="run unisolated (trusted episodes only; default: "
                        "in the sandbox, whatever the recording's run.json says)")
    replay.add_argument("--tasks-dir", default=None, metavar="DIR", help="a task folder you trust: needed where the "
                        "recording's task lives outside the built-in ones (its reference runs unsandboxed)")
    replay.set_defaults(func=cmd_replay)
    from kernelgym.report.commands import add_report_commands  # `report` and `compare` (kernelgym/report/)
    add_report_commands(sub)
    _SIGNALS_TAKEN.clear()
    try:
        args = parser.parse_args(argv)
        try:
            # `run` stops on SIGTERM as on Ctrl-C: finished episodes kept, a line saying how to resume.
            with sigterm_as_interrupt() if args.command == "run" else contextlib.nullcontext():
                code = args.func(args)
        except KernelGymError as e:
            console.print(f"[red]error:[/] {e}")
            code = 2
        except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (Terminated): what a shell reports for the signal
            code = exit_code_of_signal(e)
            console.print(f"[yellow]stopped by {'SIGTERM' if code == 128 + signal.SIGTERM else 'Ctrl-C'}[/]")
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at interpreter exit
        return code
    except BrokenPipeError:
        if not _stdout_reader_gone():  # a pipe to a child process (an agent CLI) broke: a real error
            raise
        return _quiet_closed_stdout()


def exit_code_of_signal(interrupt: KeyboardInterrupt) -> int:
    """The exit code of a `kernelgym run` stopped by `interrupt`: 128 + the signal, what a shell reports for a
    process killed by it (130 for Ctrl-C's SIGINT, 143 for SIGTERM), for either backend. A SIGTERM taken by
    `sigterm_as_interrupt` counts even where the exception that came out is a plain KeyboardInterrupt (Ray's)."""
    signum = getattr(interrupt, "signum", None) or (_SIGNALS_TAKEN[-1] if _SIGNALS_TAKEN else signal.SIGINT)
    return 128 + int(signum)


#: The exit code of a command whose stdout reader went away: 128 + SIGPIPE, what a shell reports for one killed by it.
EXIT_STDOUT_CLOSED = 141


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe (or socket) whose reading end is closed (`kernelgym list | head`): poll reports an
    error on such a write end."""
    import select
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # stdout closed, replaced by an object without a descriptor
        return False


def _quiet_closed_stdout() -> int:
    """Point stdout at /dev/null, so that the interpreter's last flush of what is still buffered does not print
    a second BrokenPipeError at exit (the recipe of Python's signal module docs); returns `EXIT_STDOUT_CLOSED`."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_STDOUT_CLOSED


if __name__ == "__main__":
    sys.exit(main())
