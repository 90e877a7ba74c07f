"""``kernelgym run --backend ray``: the local run's tasks x policies x seeds, its episodes spread over Ray actors.

Each (task, policy) run gets the run directory the local backend makes, with the same files: run.json (its
settings, so ``--resume`` works with either backend), results.json (one result per episode, in episode order,
rewritten after each) and trajectories.jsonl (each episode's lines together, in episode order). Episodes finish in
any order on the cluster; the driver writes a run's results.json and trajectories only up to the first episode not
yet finished, so a run killed midway resumes exactly as a local one (its later finished episodes are run again).

An episode runs on an `EpisodeWorker` actor (policy beside env). A worker that dies is restarted by Ray and its
episode re-run from the reset with the same seed; once the restarts are spent, the episode's result is an infra
fault (``outcome: "infra_fault"``, reward 0, no grade, ``infra_error`` saying why), never a missing row.
"""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelgym.distributed.episode_worker import EpisodeWorker
from kernelgym.distributed.placement import actor_options, connect, require_ray
from kernelgym.errors import KernelGymError
from kernelgym.grader.outcome import INFRA_FAULT
from kernelgym.rollout import write_results


@dataclass
class Run:
    """One (task, policy) run: its settings (run.json plus ``run_dir``), its finished results, and those finished
    on the cluster but not yet written (episode index -> (result, trajectory lines))."""

    settings: dict[str, Any]
    run_dir: Path
    episodes: int
    results: list[dict[str, Any]] = field(default_factory=list)
    waiting: dict[int, tuple[dict[str, Any], list[str]]] = field(default_factory=dict)
    error: str | None = None
    env_id: str = ""

    def finish(self, episode: int, result: dict[str, Any], lines: list[str]) -> None:
        """Keep episode `episode`'s result (with its ``seed``, as the local backend's rows have it, infra faults
        included) and write every result now in order (results.json after its lines)."""

        self.waiting[episode] = ({"seed": self.settings["seed"] + episode, **result}, lines)
        written = False
        while len(self.results) in self.waiting:
            result, lines = self.waiting.pop(len(self.results))
            with (self.run_dir / "trajectories.jsonl").open("a") as f:
                f.writelines(line + "\n" for line in lines)
            self.results.append(result)
            written = True
        if written:  # whole or not at all, by the local backend's writer
            write_results(self.run_dir, self.results)


def _new_run(args: argparse.Namespace, cli) -> Run:
    """A run directory for `args.task` with `args.policy`, checked and made by `kernelgym.cli.prepare_run`, as for
    the local backend (the policy is loaded there, so a bad config is refused before any actor starts)."""
    _policy, task, _hardware, run_dir, results = cli.prepare_run(args)
    saved = json.loads((run_dir / cli.RUN_SETTINGS).read_text())
    settings = saved | {"run_dir": str(run_dir.resolve())}
    return Run(settings=settings, run_dir=run_dir, episodes=args.episodes, results=results, env_id=task.env_id)


def plan_runs(args: argparse.Namespace, cli) -> tuple[list[Run], Any]:
    """The runs of ``kernelgym run`` as the local backend would make them (every policy on every task, or the one
    ``--resume``d run), and the hardware profile they run on. `cli` is `kernelgym.cli` (see `run_on_ray`).

    Raises:
        KernelGymError: as the local backend refuses its tasks, policies or --resume folder.
    """
    from kernelgym.hardware import detect_profile

    if args.resume:
        run = _new_run(args, cli)
        return [run], detect_profile(args.hardware, root=cli.hardware_roots(args))
    hardware = detect_profile(args.hardware, root=cli.hardware_roots(args))
    selectors = args.task or [cli.DEFAULT_TASK]
    policies = list(dict.fromkeys(args.policy or [cli.DEFAULT_POLICY]))
    names, skipped = cli.select_tasks(selectors, args.tasks_dir, hardware)
    for line in skipped:
        cli.console.print(f"[yellow]skipped:[/] {line}", soft_wrap=True)
    if not names:
        raise KernelGymError(f"no task of --task {' '.join(selectors)} runs on {hardware.id}")
    configs = cli.policy_configs(args.policy_config, policies)
    if len(names) * len(policies) > 1:
        cli.preflight(policies, configs, args.policies_dir, keep_going=args.keep_going)
    runs = []
    for name in names:
        for policy in policies:
            one = argparse.Namespace(**{**vars(args), "task": name, "policy": policy, "policy_config": configs[policy]})
            try:
                runs.append(_new_run(one, cli))
            except KernelGymError as e:
                if len(names) * len(policies) == 1:
                    raise
                cli.console.print(f"[red]error:[/] {name} with {policy}: {e}", soft_wrap=True)
    return runs, hardware


def _run_queue(args: argparse.Namespace, cli, queue: list[tuple[Run, int]]) -> None:
    """Run the episodes of `queue` ((run, episode index) pairs, in order) on ``args.num_envs`` workers of the Ray
    cluster at ``args.address``, each result written into its run as it comes (`Run.finish`). Interrupted
    (KeyboardInterrupt, or SIGTERM's cli.Terminated, raised again), the workers are killed and Ray shut down first.

    Raises:
        RayUnavailableError: no Ray, or no cluster at ``args.address``.
    """
    console = cli.console
    ours = not require_ray().is_initialized()  # a driver connected before (a script, a test) stays connected
    ray = connect(args.address)
    # Ray's start put its own SIGTERM handler in place (it aborts the process, leaving the episodes half-made).
    with cli.sigterm_as_interrupt():
        workers_wanted = args.num_envs or max(1, min(len(queue), int(ray.cluster_resources().get("CPU", 1))))
        options = actor_options(workers_wanted, max_restarts=2, max_task_retries=2)
        runs = len({id(run) for run, _ in queue})
        console.print(f"Ray: {len(queue)} episode(s) of {runs} run(s) on {workers_wanted} worker(s) "
                      f"({options['num_cpus']} CPU, {options['num_gpus']} GPU each)")
        new_worker = lambda: ray.remote(EpisodeWorker).options(**options).remote()  # noqa: E731
        idle: list[Any] = []
        in_flight: dict[Any, tuple[Any, Run, int]] = {}
        try:
            idle += [new_worker() for _ in range(min(workers_wanted, len(queue)))]
            _drain(ray, console, queue, idle, in_flight, new_worker)
            ray.get([worker.close.remote() for worker in idle])
        except KeyboardInterrupt:
            if ours:  # the instance goes, its workers with it; their episodes stop where they are
                ray.shutdown()
            else:  # a cluster joined: only this run's workers go
                for worker in idle + [w for w, _, _ in in_flight.values()]:
                    ray.kill(worker)
            raise
        for worker in idle:
            ray.kill(worker)


def _drain(ray, console, queue: list[tuple[Run, int]], idle: list[Any], in_flight: dict[Any, tuple[Any, Run, int]],
           new_worker) -> None:
    """Hand the episodes of `queue` to the `idle` workers until every one has finished (or its run stopped);
    `idle` and `in_flight` (task ref -> (worker, run, episode)) are updated in place, so a caller interrupted here
    knows every worker."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("episodes"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        bar = progress.add_task("episodes", total=len(queue))
        while queue or in_flight:
            while queue and idle:
                run, ep = queue.pop(0)
                worker = idle.pop()
                in_flight[worker.run_episode.remote(run.settings, ep)] = (worker, run, ep)
            [ref], _ = ray.wait(list(in_flight), num_returns=1)
            worker, run, ep = in_flight.pop(ref)
            try:
                result, lines = ray.get(ref)
                idle.append(worker)
            # The worker died more often than Ray restarts it: an infra fault, and a new worker in its place.
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as e:
                result, lines = _infra_fault(e), []
                idle.append(new_worker())
            except ray.exceptions.RayTaskError as e:  # the run cannot start on the worker: its episodes stop
                run.error = str(e.cause if getattr(e, "cause", None) else e)
                queue[:] = [(r, k) for r, k in queue if r is not run]
                idle.append(worker)
                console.print(f"[red]error:[/] {run.run_dir.name}: {run.error}", soft_wrap=True)
                progress.update(bar, total=progress.tasks[0].total - (run.episodes - ep - 1))
                continue
            run.finish(ep, result, lines)
            progress.advance(bar)
            console.print(f"{run.settings['task']} with {run.settings['policy']} episode {ep + 1}: reward "
                          f"{result['reward']:.1f}, {result['outcome']}, {result['wall_s']:.1f} s", soft_wrap=True)


def _infra_fault(error: Exception) -> dict[str, Any]:
    """The result of an episode whose worker died more often than Ray restarts it: no grade, reward 0."""
    return {"reward": 0.0, "terminated": False, "truncated": True, "steps": 0, "wall_s": 0.0, "grade": {},
            "unseen": None, "policy_error": None, "usage": None, "outcome": INFRA_FAULT,
            "infra_error": f"the episode's Ray worker died and its retries were spent: {type(error).__name__}: {error}"}


def run_on_ray(args: argparse.Namespace, cli) -> int:
    """``kernelgym run --backend ray``: plan the runs, run their episodes on ``args.num_envs`` workers of the
    cluster at ``args.address``, write each run directory, print the tables; returns the exit code (as the local
    backend's: 2 a run could not start, 3 every episode ended in a policy error, else 0).

    Args:
        args: `kernelgym run`'s arguments.
        cli: the `kernelgym.cli` module, passed in: its run-directory helpers and tables are the local backend's,
            and importing it here would make an import cycle (cli imports this module).

    Raises:
        KernelGymError: the runs cannot be planned; RayUnavailableError: no Ray.
    """
    console = cli.console

    runs, hardware = plan_runs(args, cli)
    interpreter = hardware.interpreter
    queue = [(run, ep) for run in runs for ep in range(len(run.results), run.episodes)]
    for run in runs:
        cli.print_run_header(run.env_id, run.settings["policy"], hardware)
        console.print(f"run directory: {run.run_dir}")
        if run.results:
            cli.print_resuming(len(run.results), run.episodes)
    if queue:  # Ray's start (15-25 s) only where an episode is left to run
        try:
            _run_queue(args, cli, queue)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (cli.Terminated): Ray is shut down, cli.main says the code
            cli.print_interrupted([(r.run_dir, len(r.results), r.episodes) for r in runs], backend="ray")
            raise
    for run in runs:
        cli.print_results(run.results, interpreter)
        console.print(f"trajectories: {run.run_dir / 'trajectories.jsonl'}")
    if len(runs) > 1:
        cli.print_runs_table([(r.settings["task"], r.settings["policy"], r.results, r.run_dir) for r in runs],
                         interpreter)
    if interpreter and runs:
        cli.print_interpreter_note(any(r.settings["policy"] == "tuner" for r in runs))
    codes = [2 if run.error else 3 if run.results and all(r.get("policy_error") for r in run.results) else 0
             for run in runs]
    return 2 if 2 in codes or not runs else 3 if all(c == 3 for c in codes) else 0
