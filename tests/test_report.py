"""`kernelgym report RUN_DIR...`: report.json's numbers, report.csv, and report.html rendered in headless Chromium
(Debian's `chromium`, which .ci/setup installs) with its figures checked against report.json."""
import csv
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from fakes.run_dirs import fake_grade, fake_result, make_run_dir
from kernelgym.cli import main
from kernelgym.report.runs import read_runs
from kernelgym.report.summary import FAST_P_HEADLINE
from kernelgym.report.svg import PALETTE

SPEEDUPS = {  # policy -> task -> one speedup per seed (None: that episode's kernel was wrong)
    "agent": {"triton-rmsnorm": [1.3, 1.4, 1.6], "triton-softmax": [0.9, 2.5, None]},
    "tuner": {"triton-rmsnorm": [1.05, 1.1, 1.0], "triton-softmax": [1.2, 0.95, 1.6]},
}
WINDOW = (1200, 5200)


def make_runs(root):
    """A run directory per (policy, task); the agent's episodes report tokens and cost; the rmsnorm runs have an
    unseen replay summary."""
    for policy, tasks in SPEEDUPS.items():
        for task, values in tasks.items():
            results = [fake_result(fake_grade(task, speedup=s, correct=s is not None),
                                   tokens=(1000 * (k + 1), 500) if policy == "agent" else None,
                                   cost_usd=0.01 * (k + 1) if policy == "agent" else None)
                       for k, s in enumerate(values)]
            run = make_run_dir(root, task, policy, results)
            if task == "triton-rmsnorm":
                quadrants = {"both_pass": 2, "opt_regression": 1 if policy == "agent" else 0, "both_fail": 0,
                             "opt_improvement": 0 if policy == "agent" else 1}
                (run / "unseen_summary.json").write_text(json.dumps({
                    "run_dir": str(run), "seed": 0, "episodes": 3, "quadrants": quadrants,
                    "conditional_correctness": 2 / 3 if policy == "agent" else 1.0, "partially_covered": 0,
                    "results": []}))
    return root


def test_report_numbers(tmp_path):
    runs = make_runs(tmp_path / "runs")
    out = tmp_path / "out"
    assert main(["report", str(runs), "--out", str(out)]) == 0
    r = json.loads((out / "report.json").read_text())
    assert len(r["runs"]) == 4 and not r["skipped"] and not r["interpreter"]
    for row in r["per_task"]:
        given = SPEEDUPS[row["policy"]][row["task"]]
        timed = [s for s in given if s is not None]
        assert row["speedup_mean"] == pytest.approx(statistics.fmean(timed))
        assert row["correct"] == len(timed) and row["episodes"] == len(given)
        assert row["score_mean"] == pytest.approx(statistics.fmean(120 + 100 * s if s else 20 for s in given))
    # fast_p: per task the fraction of its episodes correct and more than p times faster, averaged over tasks.
    for policy, tasks in SPEEDUPS.items():
        for p, got in zip(r["fast_p"]["p"], r["fast_p"]["by_policy"][policy]):
            want = statistics.fmean(sum(s is not None and s > p for s in v) / len(v) for v in tasks.values())
            assert got == pytest.approx(want), (policy, p)
    assert r["outcomes"]["agent"]["incorrect"] == 1 and r["outcomes"]["tuner"]["incorrect"] == 0
    assert sum(r["outcomes"]["tuner"].values()) == 6
    assert sum(map(sum, r["score_distribution"]["counts"].values())) == 12
    assert [u["tokens"] for u in r["usage"]] == [1500, 2500, 3500] * 2
    rows = list(csv.DictReader((out / "report.csv").open()))
    assert len(rows) == 12 and {row["policy"] for row in rows} == {"agent", "tuner"}
    assert sorted(float(row["score"]) for row in rows) == sorted(e["score"] for e in r["episodes"])


def test_outcome_of_an_older_run_is_decided_from_its_grade(tmp_path):
    task = "triton-rmsnorm"
    results = [fake_result(fake_grade(task, speedup=1.5)), fake_result(fake_grade(task, correct=False)),
               fake_result(fake_grade(task, speedup=1.0), policy_error="policy error: boom"),
               fake_result(fake_grade(task, speedup=1.0))]
    for r in results:  # as written before outcomes were recorded
        del r["outcome"], r["grade"]["outcome"]
    del results[3]["grade"]["stages"]
    run = make_run_dir(tmp_path, task, "tuner", results)
    rows = read_runs([run]).episodes
    assert [e.outcome for e in rows] == ["faster", "incorrect", "policy_error", "unknown"]
    assert [e.grade_outcome for e in rows] == ["faster", "incorrect", "no_gain", "unknown"]
    assert [e.seed for e in rows] == [0, 1, 2, 3]


def test_paths_that_are_not_run_directories_are_skipped(tmp_path, capsys):
    run = make_run_dir(tmp_path, "triton-rmsnorm", "tuner", [fake_result(fake_grade("triton-rmsnorm"))])
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "empty").mkdir()
    started = make_run_dir(tmp_path, "triton-softmax", "tuner", [], name="killed-before-its-first-episode")
    (started / "results.json").unlink()
    assert main(["report", str(tmp_path / "notes.txt"), str(run), str(tmp_path / "empty"), str(started)]) == 0
    out = capsys.readouterr().out
    assert out.count("skipped:") == 3 and "no readable results.json" in out
    r = json.loads((run / "report.json").read_text())  # written into the first run directory read
    assert len(r["skipped"]) == 3 and (run / "report.html").is_file() and (run / "report.csv").is_file()
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert "no finished episode to report" in capsys.readouterr().out


def test_a_real_run_reads_as_the_synthetic_ones(tmp_path, require_bwrap):
    """One real episode on the interpreter: its report, and the synthetic run format's keys against it."""
    proc = subprocess.run([sys.executable, "-m", "kernelgym.cli", "run", "--task", "triton-rmsnorm", "--policy",
                           "scripted", "--policy-config", '{"actions": []}', "--run-dir", str(tmp_path / "real")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (real,) = (tmp_path / "real").iterdir()
    assert main(["report", str(real)]) == 0
    r = json.loads((real / "report.json").read_text())
    (ep,) = r["episodes"]
    assert ep["outcome"] == "correct_not_timed" and ep["speedup"] is None and ep["score"] == 120.0
    assert r["interpreter"] and r["fast_p"]["by_policy"]["scripted"][:2] == [1.0, 0.0]
    fake = make_run_dir(tmp_path / "fake", "triton-rmsnorm", "scripted", [fake_result(fake_grade("triton-rmsnorm"))])
    real_result, fake_res = (json.loads((d / "results.json").read_text())[0] for d in (real, fake))
    assert set(fake_res) == set(real_result) and set(fake_res["usage"]) == set(real_result["usage"])
    assert set(fake_res["grade"]) == set(real_result["grade"])
    assert set(json.loads((fake / "run.json").read_text())) == set(json.loads((real / "run.json").read_text()))


def chromium() -> str:
    """Debian's chromium (or another Chromium on PATH); in CI a missing one fails, elsewhere the test skips."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    if os.environ.get("CI") == "true":
        pytest.fail("chromium is not installed: .ci/setup installs Debian's chromium package")
    pytest.skip("chromium is not installed here (install Debian's chromium package, as .ci/setup does)")


def headless(binary: str, *args: str) -> str:
    # --no-sandbox: CI containers (and root) cannot start Chromium's own sandbox; the page is our own file.
    proc = subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


class Marks(HTMLParser):
    """The rendered page's chart marks (elements with data-chart), value labels and table cells (data-field)."""

    def __init__(self):
        super().__init__()
        self.marks, self.cells, self.labels, self.skipped, self._text_of = [], [], [], [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "data-chart" in a and tag in ("rect", "circle"):
            self.marks.append({"tag": tag, **a})
        if tag == "text" and a.get("class") == "value":
            self._text_of = {**a, "text": ""}
        if tag == "td" and "data-field" in a:
            self.cells.append(a)

    def handle_data(self, data):
        if self._text_of is not None:
            self._text_of["text"] += data

    def handle_endtag(self, tag):
        if tag == "text" and self._text_of is not None:
            self.labels.append(self._text_of)
            self._text_of = None


def test_report_page_in_headless_chromium(tmp_path):
    binary = chromium()
    runs = make_runs(tmp_path / "runs")
    (tmp_path / "runs" / "stray.txt").write_text("not a run")
    out = tmp_path / "out"
    assert main(["report", *sorted(map(str, runs.iterdir())), "--out", str(out)]) == 0
    r = json.loads((out / "report.json").read_text())
    page = (out / "report.html").read_text()
    for outside in ("<script", "<link", "src=", "href=", "url("):  # self-contained: it loads nothing
        assert outside not in page

    dom = Marks()
    dom.feed(headless(binary, "--dump-dom", (out / "report.html").as_uri()))
    labels = {(x["data-chart"], x["data-category"], x["data-series"]): x["text"] for x in dom.labels}
    bars = {(m["data-chart"], m["data-category"], m["data-series"]): m["data-value"] for m in dom.marks
            if m["tag"] == "rect"}
    for row in r["per_task"]:
        key = ("speedup", row["task"], row["policy"])
        assert labels[key] == f"{row['speedup_mean']:.3f}x" and float(bars[key]) == pytest.approx(row["speedup_mean"])
    dist = r["score_distribution"]
    for policy, counts in dist["counts"].items():
        for (low, high), n in zip(dist["bins"], counts):
            assert labels[("score", f"{low:g}-{high:g}", policy)] == str(n)
    for policy, counts in r["outcomes"].items():
        shown = {k[1]: int(v) for k, v in labels.items() if k[0] == "outcomes" and k[2] == policy}
        assert shown == {o: n for o, n in counts.items() if n or o in shown} and sum(shown.values()) == 6
    for k, u in enumerate(r["unseen"]):
        for quadrant, n in u["quadrants"].items():
            assert labels[("unseen", quadrant, f"{u['task']} / {u['policy']} ({k + 1})")] == str(n)
    points = [m for m in dom.marks if m["tag"] == "circle"]
    fast = {(m["data-series"], float(m["data-x"])): float(m["data-y"]) for m in points if m["data-chart"] == "fast_p"}
    assert fast == {(policy, p): y for policy, ys in r["fast_p"]["by_policy"].items()
                    for p, y in zip(r["fast_p"]["p"], ys)}
    cells = {(c["data-field"], c.get("data-value")) for c in dom.cells}
    for policy, ys in r["fast_p"]["by_policy"].items():
        for p in FAST_P_HEADLINE:
            assert (f"fast_{p:g}", repr(ys[r["fast_p"]["p"].index(p)])) in cells
    scatter = sorted((float(m["data-x"]), float(m["data-y"])) for m in points if m["data-chart"] == "usage-tokens")
    assert scatter == sorted((u["tokens"], u["speedup"]) for u in r["usage"] if u["speedup"] is not None)
    assert len(scatter) == 5  # the agent's six episodes, one of them wrong (not timed)
    assert "stray.txt" in r["skipped"][0] and "stray.txt" in page

    shot = tmp_path / "page.png"
    headless(binary, f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}", (out / "report.html").as_uri())
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == WINDOW
    try:
        from PIL import Image
    except ImportError:  # the pixels are checked where Pillow is installed (the data extra, as in CI)
        return
    colours = Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 20)
    drawn = {c: n for n, c in colours}
    for series_colour in PALETTE[:2]:  # both policies' bars and points were painted
        rgb = tuple(int(series_colour[i:i + 2], 16) for i in (1, 3, 5))
        assert drawn.get(rgb, 0) > 2000, series_colour


@pytest.mark.parametrize("edit, why", [
    (lambda r: r["grade"].update(speedup=float("inf")), "episode 1: the grade's speedup is inf, not a finite number"),
    (lambda r: r["grade"].update(score=float("nan")), "episode 1: the grade's score is nan, not a finite number"),
    (lambda r: r["usage"].update(cost_usd=float("inf")), "episode 1: cost_usd is inf, not a finite number"),
    (lambda r: r["usage"].update(output_tokens=[1]), "usage token counts must be whole numbers"),
    (lambda r: r.update(seed=[1]), "episode 1: seed [1] is not a whole number"),
])
def test_a_corrupted_results_file_is_skipped_with_its_reason(tmp_path, capsys, edit, why):
    # Python's json reads NaN and Infinity: such a value broke the page's axes and bins (a traceback) or a mean.
    task = "triton-rmsnorm"
    good = make_run_dir(tmp_path, task, "agent", [fake_result(fake_grade(task, speedup=1.5), tokens=(10, 5))])
    bad = make_run_dir(tmp_path, task, "tuner", [fake_result(fake_grade(task, speedup=1.5), tokens=(10, 5))])
    results = json.loads((bad / "results.json").read_text())
    edit(results[0])
    (bad / "results.json").write_text(json.dumps(results))
    assert main(["report", str(good), str(bad), "--out", str(tmp_path / "out")]) == 0
    assert why in capsys.readouterr().out
    r = json.loads((tmp_path / "out" / "report.json").read_text())
    assert len(r["episodes"]) == 1 and len(r["skipped"]) == 1 and why in r["skipped"][0]


def test_negative_scores_and_a_malformed_older_grade_are_reported(tmp_path):
    task = "triton-rmsnorm"
    older = {"stages": [{"passed": True}, {"passed": True}, {"passed": True}], "configs": [{"noise_band": "ab"}],
             "checks": {}}
    run = make_run_dir(tmp_path, task, "agent", [{"reward": -5.0, "grade": {"score": -5.0}, "steps": 1},
                                                 {"reward": 0.0, "grade": older, "steps": 1}])
    assert main(["report", str(run)]) == 0
    r = json.loads((run / "report.json").read_text())
    assert r["score_distribution"]["bins"][0] == [0.0, 20.0] and r["score_distribution"]["counts"]["agent"][0] == 2
    assert [e["outcome"] for e in r["episodes"]] == ["unknown", "unknown"]


def test_a_link_planted_at_a_report_file_is_replaced_not_written_through(tmp_path):
    # The report goes into the first run directory by default, which may come from elsewhere: a report.html there
    # that links to another file got the page written into that file.
    run = make_run_dir(tmp_path, "triton-rmsnorm", "agent", [fake_result(fake_grade("triton-rmsnorm"))])
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    for name in ("report.html", "report.json", "report.csv"):
        (run / name).symlink_to(victim)
    assert main(["report", str(run)]) == 0
    assert victim.read_text() == "precious"
    assert not any((run / name).is_symlink() for name in ("report.html", "report.json", "report.csv"))
    assert json.loads((run / "report.json").read_text())["episodes"][0]["policy"] == "agent"
    assert sorted(p.name for p in run.iterdir() if p.name.startswith(".")) == []  # no part file left
