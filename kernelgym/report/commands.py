"""The ``kernelgym report`` and ``kernelgym compare`` subcommands: their arguments and what they print."""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def _console():
    """A rich console as the CLI's (kernelgym.cli imports this module: importing it back would be a cycle)."""
    import sys

    from rich.console import Console
    return Console(width=None if sys.stdout.isatty() else 200)


def add_report_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``report`` and ``compare`` to `kernelgym`'s subcommands `sub` (heavy imports wait for the command)."""
    from kernelgym.report.stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED

    report = sub.add_parser("report", help="write report.html (charts), report.json and report.csv of run "
                            "directories (docs/REPORTS.md)")
    report.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories of `kernelgym run`, or folders "
                        "of them (--run-dir's parent); other paths are skipped with a warning")
    report.add_argument("--out", default=None, metavar="DIR", help="where to write the three files (default: the "
                        "first run directory)")
    report.set_defaults(func=cmd_report)
    compare = sub.add_parser("compare", help="run B against run A, paired by (task, seed): per-task deltas and "
                             "bootstrap intervals of the mean differences (docs/REPORTS.md)")
    compare.add_argument("run_a", metavar="RUN_A", help="a run directory, or a folder of them")
    compare.add_argument("run_b", metavar="RUN_B", help="the same for the other side; differences are B - A")
    compare.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                         help=f"bootstrap resamples (default {DEFAULT_RESAMPLES})")
    compare.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE,
                         help=f"the intervals' confidence level, in (0, 1) (default {DEFAULT_CONFIDENCE})")
    compare.add_argument("--seed", type=int, default=DEFAULT_SEED,
                         help=f"the bootstrap's random seed (default {DEFAULT_SEED}: the same runs give the same "
                         "intervals)")
    compare.add_argument("--json", default=None, metavar="FILE", help="also write the comparison as JSON to FILE")
    compare.set_defaults(func=cmd_compare)


def cmd_report(args: argparse.Namespace) -> int:
    """`kernelgym report RUN_DIR... [--out DIR]`."""
    from rich.markup import escape

    console = _console()
    from kernelgym.report.writer import write_report

    written = write_report(args.runs, args.out)
    for line in written.report["skipped"]:
        console.print(f"[yellow]skipped:[/] {escape(line)}", soft_wrap=True)
    r = written.report
    runs = len(r["runs"])
    console.print(f"report of {len(r['episodes'])} episodes from {runs} run director{'y' if runs == 1 else 'ies'}:")
    for path in written.files:
        console.print(f"  {escape(str(path))}", soft_wrap=True)
    return 0


def _side(path: str, label: str):
    from rich.markup import escape

    console = _console()
    from kernelgym.errors import KernelGymError
    from kernelgym.report.runs import read_runs

    runs = read_runs([path])
    for line in runs.skipped:
        console.print(f"[yellow]skipped:[/] {escape(line)}", soft_wrap=True)
    if not runs.episodes:
        raise KernelGymError(f"{label} ({path}): no finished episode in a run directory")
    policies = ", ".join(dict.fromkeys(e.policy for e in runs.episodes))
    console.print(f"{label}: {escape(path)} ({len(runs.episodes)} episodes, policies {escape(policies)})",
                  soft_wrap=True)
    return runs.episodes


def cmd_compare(args: argparse.Namespace) -> int:
    """`kernelgym compare RUN_A RUN_B`: per-task table, unpaired episodes, the verdict line."""
    from rich.table import Table
    from rich.text import Text

    console = _console()
    from kernelgym.errors import KernelGymError
    from kernelgym.report.compare import compare_runs

    rows_a, rows_b = _side(args.run_a, "A"), _side(args.run_b, "B")
    try:
        c = compare_runs(rows_a, rows_b, n_resamples=args.resamples, confidence=args.confidence, seed=args.seed)
    except ValueError as e:
        raise KernelGymError(str(e)) from None
    sp = lambda x: "n/a" if x is None else f"{x:.3f}x"  # noqa: E731
    table = Table(title="B - A per task", title_justify="left")
    for col in ("task", "pairs", "score A", "score B", "score B-A", "timed pairs", "speedup A", "speedup B",
                "speedup B-A"):
        table.add_column(col, justify="left" if col == "task" else "right")
    for t in c.tasks:  # the task as Text: a name from a run directory is data, never rich markup
        table.add_row(Text(t.task), str(t.pairs), f"{t.score_a:.1f}", f"{t.score_b:.1f}", f"{t.score_delta:+.1f}",
                      str(t.speedup_pairs), sp(t.speedup_a), sp(t.speedup_b),
                      "n/a" if t.speedup_delta is None else f"{t.speedup_delta:+.3f}x")
    console.print(table)
    if c.unpaired_a or c.unpaired_b or c.infra_faults:
        console.print(f"[yellow]left out: {len(c.unpaired_a)} episode(s) of A and {len(c.unpaired_b)} of B with no "
                      f"(task, seed) pair on the other side; {c.infra_faults} pair(s) with an infrastructure fault[/]")
    if args.json:
        Path(args.json).write_text(json.dumps(c.to_dict(), indent=1))
    console.print(c.verdict, soft_wrap=True, markup=False, highlight=False)
    return 0
