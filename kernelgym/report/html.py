"""``report.html``: the report (`build_report`'s data) as one self-contained page, charts as inline SVG.

The page loads nothing (no script, no stylesheet, no image from elsewhere), so it opens from a mail attachment or a
CI artifact as it is. Each chart sits in a ``<figure id=...>`` beside a table of the same numbers; each chart's
bars and points, and each table cell holding a number, carry ``data-chart``/``data-series``/``data-category``
(cells: ``data-field``) so the numbers can be checked against ``report.json``.
"""
from __future__ import annotations

from html import escape
from typing import Any, Callable, Sequence

from kernelgym.grader.outcome import OUTCOMES
from kernelgym.report.summary import FAST_P_HEADLINE
from kernelgym.report.svg import grouped_bars, line_chart, scatter
from kernelgym.unseen.evaluate import QUADRANTS


def fmt_speedup(v: float | None) -> str:
    """``1.234x``; ``n/a`` for None (how the page and its tables show this kind of number)."""
    return "n/a" if v is None else f"{v:.3f}x"


def fmt_score(v: float | None) -> str:
    """``232.5``; ``n/a`` for None (how the page and its tables show this kind of number)."""
    return "n/a" if v is None else f"{v:.1f}"


def fmt_fraction(v: float | None) -> str:
    """``0.75``; ``n/a`` for None (how the page and its tables show this kind of number)."""
    return "n/a" if v is None else f"{v:.2f}"


def fmt_count(v: float | None) -> str:
    """``3``; ``n/a`` for None (how the page and its tables show this kind of number)."""
    return "n/a" if v is None else str(int(round(v)))


def fmt_cost(v: float | None) -> str:
    """``$0.0123``; ``n/a`` for None (how the page and its tables show this kind of number)."""
    return "n/a" if v is None else f"${v:.4f}"


def score_bin_label(edges: Sequence[float]) -> str:
    """``120-140`` for the bin [120, 140)."""
    return f"{edges[0]:g}-{edges[1]:g}"


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]], fields: Sequence[str | None], css: str) -> str:
    """An HTML table; cell k of a row is ``(value, text)`` or plain text, and gets ``data-field=fields[k]``
    (and ``data-value`` for a value) where `fields[k]` is not None."""
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for cell, field in zip(row, fields):
            value, text = cell if isinstance(cell, tuple) else (None, cell)
            attrs = f' data-field="{escape(field)}"' if field else ""
            attrs += f' data-value="{escape(repr(value))}"' if value is not None else ""
            cells.append(f"<td{attrs}>{escape(str(text))}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _figure(fig_id: str, title: str, svg: str, note: str, tables: str) -> str:
    return (f'<section><h2>{escape(title)}</h2><figure id="{fig_id}">{svg}<figcaption>{note}</figcaption>'
            f'</figure>{tables}</section>')


def _speedup_section(r: dict) -> str:
    rows = r["per_task"]
    tasks = list(dict.fromkeys(x["task"] for x in rows))
    policies = list(dict.fromkeys(x["policy"] for x in rows))
    by = {(x["task"], x["policy"]): x for x in rows}
    series = {p: [by[(t, p)]["speedup_mean"] if (t, p) in by else None for t in tasks] for p in policies}
    svg = grouped_bars("Mean speedup per task", tasks, series, fmt_speedup, "speedup (x)", chart="speedup")
    note = ("Mean over a task's timed episodes of the grade's speedup (mean over configs of baseline time / "
            "candidate time). n/a: not timed" + (" (every episode ran on the CPU interpreter)." if r["interpreter"]
                                                 else "."))
    t = table(["task", "policy", "episodes", "compiled", "correct", "timed", "score (mean)", "speedup (mean)",
               "speedup (geomean)"],
              [[x["task"], x["policy"], (x["episodes"], x["episodes"]), (x["compiled"], x["compiled"]),
                (x["correct"], x["correct"]), (x["timed"], x["timed"]), (x["score_mean"], fmt_score(x["score_mean"])),
                (x["speedup_mean"], fmt_speedup(x["speedup_mean"])),
                (x["speedup_geomean"], fmt_speedup(x["speedup_geomean"]))] for x in rows],
              ["task", "policy", "episodes", "compiled", "correct", "timed", "score_mean", "speedup_mean",
               "speedup_geomean"], "per-task")
    return _figure("speedup-per-task", "Speedup per task", svg, escape(note), t)


def _score_section(r: dict) -> str:
    dist = r["score_distribution"]
    labels = [score_bin_label(b) for b in dist["bins"]]
    svg = grouped_bars("Score distribution (episodes per score bin)", labels, dist["counts"], fmt_count, "episodes",
                       chart="score")
    note = "Arena score: 0 did not compile, 20 compiled but wrong, 120 correct, 120 + 100 x speedup when timed."
    return _figure("score-distribution", "Score distribution", svg, escape(note), "")


def _fast_p_section(r: dict) -> str:
    fp = r["fast_p"]
    svg = line_chart("fast_p: fraction of tasks correct and more than p times faster", fp["p"], fp["by_policy"],
                     "p (speedup threshold)", "fraction of tasks", fmt_fraction, chart="fast_p")
    index = {p: k for k, p in enumerate(fp["p"])}
    rows = [[policy] + [(values[index[p]], fmt_fraction(values[index[p]])) for p in FAST_P_HEADLINE]
            for policy, values in fp["by_policy"].items()]
    t = table(["policy"] + [f"fast_{p:g}" for p in FAST_P_HEADLINE], rows,
              ["policy"] + [f"fast_{p:g}" for p in FAST_P_HEADLINE], "fast-p")
    note = ("KernelBench's fast_p; a task with several episodes counts the fraction of them that qualify. An "
            "untimed correct kernel counts at p = 0 only.")
    return _figure("fast-p", "fast_p", svg, escape(note), t)


def _outcome_section(r: dict) -> str:
    counts = r["outcomes"]
    shown = [o for o in next(iter(counts.values()), {}) if any(c[o] for c in counts.values())]
    series = {policy: [c[o] for o in shown] for policy, c in counts.items()}
    svg = grouped_bars("Outcomes per policy (episodes)", shown, series, fmt_count, "episodes", chart="outcomes")
    policies = list(counts)
    rows = [[o, *[(counts[p][o], counts[p][o]) for p in policies], OUTCOMES.get(o, "outcome not recorded and not "
             "decidable from the stored grade")] for o in shown]
    t = table(["outcome", *policies, "meaning"], rows, ["outcome", *[f"count:{p}" for p in policies], None],
              "outcomes")
    return _figure("outcomes", "Outcomes per policy", svg, "Each episode's one outcome (docs/GRADING.md).", t)


def _unseen_section(r: dict) -> str:
    unseen = r["unseen"]
    if not unseen:
        return ('<section><h2>Unseen configs</h2><p id="unseen-none">No run here has an unseen replay: '
                '<code>kernelgym unseen RUN_DIR</code> makes one.</p></section>')
    labels = [f"{u['task']} / {u['policy']} ({k + 1})" for k, u in enumerate(unseen)]
    series = {label: [u["quadrants"].get(q, 0) for q in QUADRANTS] for label, u in zip(labels, unseen)}
    svg = grouped_bars("Unseen-config quadrants (episodes)", list(QUADRANTS), series, fmt_count, "episodes",
                       chart="unseen")
    rows = [[label, u["run_dir"], (u["episodes"], u["episodes"]),
             *[(u["quadrants"].get(q, 0), u["quadrants"].get(q, 0)) for q in QUADRANTS],
             (u["conditional_correctness"], fmt_fraction(u["conditional_correctness"])),
             (u["partially_covered"], u["partially_covered"])] for label, u in zip(labels, unseen)]
    t = table(["run", "run directory", "episodes", *QUADRANTS, "P(optimized correct | original correct)",
               "partially covered"], rows,
              ["label", "run_dir", "episodes", *QUADRANTS, "conditional_correctness", "partially_covered"], "unseen")
    note = ("From each run's unseen_summary.json: the original and final kernels replayed on private unseen "
            "configs. both_pass: both correct on all; opt_regression: only the original; opt_improvement: only "
            "the final one. Partially covered: episodes whose replay left part of the config space out (every one "
            "on the CPU interpreter); their quadrants hold on what was covered only.")
    return _figure("unseen", "Unseen configs", svg, escape(note), t)


def _usage_section(r: dict) -> str:
    usage = r["usage"]
    timed = [u for u in usage if u["speedup"] is not None]
    figures = []
    for key, label, fmt_x in (("tokens", "tokens", fmt_count), ("cost_usd", "cost (USD)", fmt_cost)):
        points = [(u[key], u["speedup"], u["policy"], f"{u['task']} seed {u['seed']}") for u in timed
                  if u[key] is not None]
        if points:
            figures.append(scatter(f"Speedup against {label}", points, label, "speedup (x)", fmt_x, fmt_speedup,
                                   chart=f"usage-{key}"))
    if not usage:
        note = "No policy here reported token use (scripted and tuner use no model)."
    elif not figures:
        note = "No episode with token use or cost was timed: nothing to plot against speedup."
    else:
        note = "One point per timed episode whose policy reported its tokens (or priced cost)."
    rows = [[u["task"], u["policy"], u["seed"], (u["tokens"], fmt_count(u["tokens"])),
             (u["cost_usd"], fmt_cost(u["cost_usd"])), (u["speedup"], fmt_speedup(u["speedup"]))] for u in usage]
    t = table(["task", "policy", "seed", "tokens", "cost", "speedup"], rows,
              ["task", "policy", "seed", "tokens", "cost_usd", "speedup"], "usage") if rows else ""
    return _figure("usage", "Tokens and cost against speedup", "".join(figures), escape(note), t)


def _episodes_section(r: dict) -> str:
    cols: list[tuple[str, str, Callable[[Any], str]]] = [
        ("task", "task", str), ("policy", "policy", str), ("seed", "seed", str), ("outcome", "outcome", str),
        ("score", "score", fmt_score), ("speedup", "speedup", fmt_speedup), ("steps", "steps", str),
        ("wall_s", "wall s", lambda v: "n/a" if v is None else f"{v:.1f}"), ("run_dir", "run directory", str)]
    rows = [[(e[k], f(e[k])) if k in ("score", "speedup") else f(e[k]) for k, _, f in cols] for e in r["episodes"]]
    return ("<section><h2>Episodes</h2>" + table([c for _, c, _ in cols], rows, [k for k, _, _ in cols], "episodes")
            + "</section>")


_STYLE = """body{font-family:sans-serif;margin:24px;max-width:1000px;color:#222}
table{border-collapse:collapse;margin:8px 0 20px;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:left}th{background:#f3f3f3}figure{margin:0}figcaption{font-size:12px;color:#555;margin:4px 0}
.warn{color:#a05a00}code{background:#f3f3f3;padding:0 3px}"""


def render_html(r: dict) -> str:
    """The page for the report `r` (`kernelgym.report.summary.build_report`'s data)."""
    runs = table(["run directory", "tasks", "policies", "episodes"],
                 [[x["run_dir"], ", ".join(x["tasks"]), ", ".join(x["policies"]), (x["episodes"], x["episodes"])]
                  for x in r["runs"]], ["run_dir", "tasks", "policies", "episodes"], "runs")
    skipped = "".join(f'<li class="warn">{escape(s)}</li>' for s in r["skipped"])
    n_runs = len(r["runs"])
    head = (f"<h1>kernelgym report</h1><p>{len(r['episodes'])} episodes from {n_runs} run "
            f"director{'y' if n_runs == 1 else 'ies'}."
            + (" <strong>CPU interpreter: correctness only, nothing was timed.</strong>" if r["interpreter"] else "")
            + f"</p>{runs}" + (f"<p>Skipped:</p><ul id=\"skipped\">{skipped}</ul>" if skipped else ""))
    sections = [_speedup_section(r), _score_section(r), _fast_p_section(r), _outcome_section(r),
                _unseen_section(r), _usage_section(r), _episodes_section(r)]
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>kernelgym report</title>'
            f"<style>{_STYLE}</style></head><body>{head}{''.join(sections)}</body></html>\n")
