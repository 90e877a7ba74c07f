"""`write_report`: ``report.html``, ``report.json`` and ``report.csv`` of run directories (`kernelgym report`)."""
from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Iterable

from kernelgym.errors import KernelGymError
from kernelgym.report.html import render_html
from kernelgym.report.runs import EpisodeRow, read_runs
from kernelgym.report.summary import build_report

REPORT_FILES = ("report.html", "report.json", "report.csv")


@dataclass
class WrittenReport:
    """Where `write_report` wrote, and what it wrote."""

    out_dir: Path
    files: list[Path]
    report: dict[str, Any]
    """`build_report`'s data, as in report.json."""


def _replace(path: Path, text: str) -> None:
    """Write `text` to a new file beside `path`, then rename it over `path`: a link planted at `path` (the default
    folder is a run directory, which may come from elsewhere) is replaced, never written through."""
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    part.unlink(missing_ok=True)
    with open(part, "x", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(part, path)


def write_report(paths: Iterable[str | Path], out_dir: str | Path | None = None) -> WrittenReport:
    """Read the run directories among `paths` (`kernelgym.report.runs.read_runs`: a folder of run directories
    counts as its runs; other paths are skipped, listed in the report's ``skipped``) and write `REPORT_FILES` into
    `out_dir` (default: the first run directory read). report.csv holds one row per episode (`EpisodeRow`'s
    fields).

    Raises:
        KernelGymError: no run directory with a finished episode was found (the skipped paths and why), or
            `out_dir` cannot be written.
    """
    runs = read_runs(paths)
    if not runs.episodes:
        raise KernelGymError("no finished episode to report: " + ("; ".join(runs.skipped) or "no path given"))
    report = build_report(runs)
    out = Path(out_dir) if out_dir is not None else runs.run_dirs[0]
    try:
        out.mkdir(parents=True, exist_ok=True)
        html_path, json_path, csv_path = (out / name for name in REPORT_FILES)
        _replace(html_path, render_html(report))
        _replace(json_path, json.dumps(report, indent=1))
        columns = [f.name for f in fields(EpisodeRow)]
        text = io.StringIO(newline="")
        writer = csv.DictWriter(text, fieldnames=columns)
        writer.writeheader()
        writer.writerows({k: ("" if e[k] is None else e[k]) for k in columns} for e in report["episodes"])
        _replace(csv_path, text.getvalue())
    except OSError as e:
        raise KernelGymError(f"cannot write the report into {out}: {e}") from None
    return WrittenReport(out, [html_path, json_path, csv_path], report)
