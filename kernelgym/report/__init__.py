"""Reports and A/B comparisons of `kernelgym run` directories (``kernelgym report``, ``kernelgym compare``).

- `runs`: run directories read back as one `EpisodeRow` per episode.
- `stats`: the paired bootstrap interval and KernelBench's fast_p.
- `summary`: a report's numbers (report.json); `svg` and `html`: its page; `writer`: the three files.
- `compare`: run B against run A, paired by (task, seed).
- `commands`: the two subcommands.

docs/REPORTS.md describes both commands.
"""
from kernelgym.report.compare import Comparison, TaskDelta, compare_runs
from kernelgym.report.runs import EpisodeRow, RunSet, read_runs
from kernelgym.report.stats import Interval, fast_p, paired_bootstrap
from kernelgym.report.summary import build_report
from kernelgym.report.writer import WrittenReport, write_report

__all__ = ["Comparison", "EpisodeRow", "Interval", "RunSet", "TaskDelta", "WrittenReport", "build_report",
           "compare_runs", "fast_p", "paired_bootstrap", "read_runs", "write_report"]
