"""`kernelgym compare RUN_A RUN_B`: pairs by (task, seed), the paired bootstrap interval, the verdict line."""
import json
import statistics

import numpy as np
import pytest

from fakes.run_dirs import fake_grade, fake_result, make_run_dir
from kernelgym.cli import main
from kernelgym.errors import KernelGymError
from kernelgym.report import compare_runs, paired_bootstrap, read_runs

TASKS = ("triton-rmsnorm", "triton-softmax", "triton-matmul", "triton-layernorm", "triton-gelu")
SEEDS = 8


def speedups(shift: float, noise: float, seed: int) -> dict[str, list[float]]:
    """Per task, one speedup per seed: 1.2 + `shift` + noise centred on 0 (so the mean shift is exactly `shift`)."""
    rng = np.random.default_rng(seed)
    e = rng.normal(0.0, noise, size=(len(TASKS), SEEDS))
    e -= e.mean()
    return {task: [1.2 + shift + float(x) for x in row] for task, row in zip(TASKS, e)}


def write_side(root, policy: str, by_task: dict[str, list[float]]):
    side = root / policy
    for task, values in by_task.items():
        make_run_dir(side, task, policy, [fake_result(fake_grade(task, speedup=s)) for s in values])
    return side


def test_a_known_difference_is_covered_and_significant(tmp_path, capsys):
    a = write_side(tmp_path, "tuner", speedups(0.0, 0.05, seed=1))
    b = write_side(tmp_path, "agent", speedups(0.2, 0.05, seed=2))
    out = tmp_path / "comparison.json"
    assert main(["compare", str(a), str(b), "--json", str(out)]) == 0
    c = json.loads(out.read_text())
    assert c["pairs"] == len(TASKS) * SEEDS and not c["unpaired_a"] and not c["unpaired_b"]
    # The true mean differences: 0.2 in speedup, 100 x 0.2 = 20 points in score (score = 120 + 100 x speedup).
    sp, score = c["speedup"], c["score"]
    assert sp["mean"] == pytest.approx(0.2) and sp["low"] < 0.2 < sp["high"] and sp["low"] > 0
    assert score["mean"] == pytest.approx(20.0) and score["low"] < 20.0 < score["high"] and score["low"] > 0
    assert not sp["includes_zero"] and not score["includes_zero"]
    assert sp["confidence"] == 0.95 and sp["n_resamples"] == 10_000
    verdict = capsys.readouterr().out.strip().splitlines()[-1]
    assert verdict == c["verdict"]
    assert "B is significantly higher" in verdict and "B is significantly faster" in verdict
    assert "no significant difference" not in verdict
    assert {t["task"] for t in c["tasks"]} == set(TASKS)
    assert all(t["speedup_delta"] == pytest.approx(statistics.fmean(
        speedups(0.2, 0.05, 2)[t["task"]]) - statistics.fmean(speedups(0.0, 0.05, 1)[t["task"]])) for t in c["tasks"])


def test_no_difference_says_so(tmp_path, capsys):
    a = write_side(tmp_path, "tuner", speedups(0.0, 0.05, seed=3))
    b = write_side(tmp_path, "agent", speedups(0.0, 0.05, seed=4))
    assert main(["compare", str(a), str(b)]) == 0
    verdict = capsys.readouterr().out.strip().splitlines()[-1]
    assert verdict.startswith("B vs A over 40 (task, seed) pairs")
    assert verdict.count("no significant difference (the interval includes 0)") == 2, verdict


def test_interval_matches_the_normal_approximation_and_is_reproducible():
    rng = np.random.default_rng(7)
    d = rng.normal(1.0, 2.0, size=400)
    iv = paired_bootstrap(d)
    half = 1.96 * d.std(ddof=1) / np.sqrt(d.size)
    assert iv.mean == pytest.approx(d.mean())
    assert iv.low == pytest.approx(d.mean() - half, abs=0.03) and iv.high == pytest.approx(d.mean() + half, abs=0.03)
    assert paired_bootstrap(d) == iv  # fixed seed: the same interval
    assert paired_bootstrap(d, seed=1) != iv
    narrow = paired_bootstrap(d, confidence=0.5, n_resamples=2000)
    assert iv.low < narrow.low < narrow.high < iv.high


@pytest.mark.parametrize("kwargs, message", [
    ({"differences": []}, "at least one difference"),
    ({"differences": [1.0, float("nan")]}, "finite"),
    ({"differences": [1.0], "confidence": 1.0}, "confidence must be in"),
    ({"differences": [1.0], "n_resamples": 0}, "n_resamples must be at least 1"),
])
def test_bad_bootstrap_input_is_refused(kwargs, message):
    differences = kwargs.pop("differences")
    with pytest.raises(ValueError, match=message):
        paired_bootstrap(differences, **kwargs)


def test_unpaired_episodes_and_infra_faults_are_left_out(tmp_path):
    task = "triton-rmsnorm"
    a = make_run_dir(tmp_path / "a", task, "tuner", [fake_result(fake_grade(task, speedup=1.0)) for _ in range(4)])
    faulty = fake_grade(task, compiled=False, fault="infra")
    assert faulty["outcome"] == "infra_fault"
    b = make_run_dir(tmp_path / "b", task, "agent", [fake_result(fake_grade(task, speedup=1.5)), fake_result(faulty)],
                     seed=2)  # seeds 2 and 3: pairs with A's episodes 3 and 4
    c = compare_runs(read_runs([a]).episodes, read_runs([b]).episodes)
    assert c.pairs == 1 and c.infra_faults == 1
    assert c.unpaired_a == [(task, 0), (task, 1)] and c.unpaired_b == []
    assert c.speedup.mean == pytest.approx(0.5)


def test_two_episodes_of_one_task_and_seed_on_a_side_are_refused(tmp_path):
    task = "triton-rmsnorm"
    for policy in ("x", "y"):
        make_run_dir(tmp_path / "a", task, policy, [fake_result(fake_grade(task, speedup=1.0))])
    rows = read_runs([tmp_path / "a"]).episodes
    with pytest.raises(KernelGymError, match=r"A holds two episodes of task triton-rmsnorm with seed 0"):
        compare_runs(rows, rows)


def test_untimed_runs_compare_scores_only(tmp_path, capsys):
    task = "triton-rmsnorm"
    grades = [fake_grade(task, hardware="cpu-interpreter"), fake_grade(task, correct=False, hardware="cpu-interpreter")]
    a = make_run_dir(tmp_path / "a", task, "tuner", [fake_result(g) for g in grades])
    b = make_run_dir(tmp_path / "b", task, "agent", [fake_result(grades[0]), fake_result(grades[0])])
    assert main(["compare", str(a), str(b)]) == 0
    verdict = capsys.readouterr().out.strip().splitlines()[-1]
    assert "score +50.00" in verdict and "speedup: not timed on both sides" in verdict


def test_a_side_with_no_run_directory_is_an_error(tmp_path, capsys):
    task = "triton-rmsnorm"
    a = make_run_dir(tmp_path / "a", task, "tuner", [fake_result(fake_grade(task, speedup=1.0))])
    (tmp_path / "empty").mkdir()
    assert main(["compare", str(a), str(tmp_path / "empty")]) == 2
    out = capsys.readouterr().out
    assert "skipped:" in out and "not a run directory" in out and "B (" in out


def test_one_pair_is_not_called_significant_and_left_out_pairs_are_named(tmp_path):
    task = "triton-rmsnorm"
    a = make_run_dir(tmp_path / "a", task, "tuner", [fake_result(fake_grade(task, speedup=1.0)) for _ in range(2)])
    faulty = fake_grade(task, compiled=False, fault="infra")
    b = make_run_dir(tmp_path / "b", task, "agent", [fake_result(fake_grade(task, speedup=2.0)), fake_result(faulty)])
    c = compare_runs(read_runs([a]).episodes, read_runs([b]).episodes)
    # One pair resamples to itself (a zero-width interval): no verdict of significance from it.
    assert c.pairs == 1 and c.score.low == c.score.high
    assert "significantly" not in c.verdict and c.verdict.count("one pair, too few to judge significance") == 2
    assert c.verdict.endswith("(left out: 1 with an infrastructure fault)"), c.verdict


def test_rich_markup_in_names_from_a_run_directory_is_printed_as_text(tmp_path, capsys):
    # Task and policy names come from run directories (results.json can name its own): never rich markup.
    name = "[red]x<script>"  # rendered as markup, "[red]" would vanish (and a "[/]" would raise MarkupError)
    sides = []
    for side in ("a", "b"):
        run = make_run_dir(tmp_path / side, "triton-rmsnorm", name, [fake_result(fake_grade("triton-rmsnorm",
                                                                                             speedup=1.0))])
        results = json.loads((run / "results.json").read_text())
        results[0]["task"] = name
        (run / "results.json").write_text(json.dumps(results))
        sides.append(str(run))
    assert main(["compare", *sides]) == 0
    out = capsys.readouterr().out
    assert f"policies {name})" in out and f"│ {name} │" in out, out


def test_a_few_equal_pairs_and_mixed_hardware_get_no_verdict_of_significance(tmp_path):
    from kernelgym.report.compare import MIN_PAIRS
    task = "triton-rmsnorm"
    n = MIN_PAIRS - 1
    a = make_run_dir(tmp_path / "a", task, "tuner", [fake_result(fake_grade(task, speedup=1.0)) for _ in range(n)])
    b = make_run_dir(tmp_path / "b", task, "agent", [fake_result(fake_grade(task, speedup=1.5)) for _ in range(n)])
    c = compare_runs(read_runs([a]).episodes, read_runs([b]).episodes)
    assert c.pairs == n and c.score.low == c.score.high  # equal differences: a zero-width interval
    assert "significantly" not in c.verdict and f"{n} pairs, too few to judge significance" in c.verdict
    cpu = make_run_dir(tmp_path / "c", task, "agent", [fake_result(fake_grade(task, hardware="cpu-interpreter"))
                                                       for _ in range(n)])
    mixed = compare_runs(read_runs([a]).episodes, read_runs([cpu]).episodes)
    assert "warning: A ran on h200, B on cpu-interpreter: not comparable" in mixed.verdict, mixed.verdict
