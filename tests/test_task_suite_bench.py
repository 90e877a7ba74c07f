"""benchmarks/task_suite.py (the task suite's GPU benchmark) on the CPU interpreter: nothing is timed here, so these
tests check its plumbing: the task filters, the skip of a task that declares the hardware unsupported, the budget
that stops the run and still writes the JSON, and the known-faster kernels it grades."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "task_suite.py"


def _run(tmp_path, *args):
    out = tmp_path / "suite.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), *args], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    return proc, json.loads(out.read_text())


def test_grades_the_chosen_tasks_and_skips_a_declared_one_with_its_reason(tmp_path, require_bwrap):
    proc, data = _run(tmp_path, "--only", "triton-cumsum,triton-per-token-quant-fp8,triton-softmax",
                      "--skip", "triton-softmax", "--n", "2", "--observed", "1")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {r["task"]: r for r in data["rows"]}
    assert sorted(rows) == ["triton-cumsum", "triton-per-token-quant-fp8"]
    assert "float8_e4m3fn" in rows["triton-per-token-quant-fp8"]["not_run"]
    cumsum = rows["triton-cumsum"]
    assert cumsum["baseline_correct"] and cumsum["unseen_reference"]["passed"]
    labels = [g["label"] for g in data["gradings"]]
    assert labels == ["baseline", "baseline", "baseline-observed"]
    assert "| triton-cumsum |" in proc.stdout and "not run: triton-per-token-quant-fp8" in proc.stdout


def test_a_spent_budget_stops_cleanly_and_writes_what_it_has(tmp_path):
    proc, data = _run(tmp_path, "--only", "triton-cumsum,triton-embedding", "--budget-s", "0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert data["gradings"] == []
    assert [r["not_run"] for r in data["rows"]] == ["the budget of 0 s was spent"] * 2


def test_an_unknown_task_name_is_refused(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--only", "triton-nope", "--out", str(tmp_path / "x.json")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 2 and "triton-nope" in proc.stderr


def test_known_faster_kernels_cover_matmul_and_attention():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import task_suite
    finally:
        sys.path.remove(str(SCRIPT.parent))
    fast = task_suite.known_faster()
    assert len(fast) >= 8 and {"triton-matmul", "triton-flash-attention", "triton-paged-attention-decode"} <= set(fast)
    assert all(path.is_file() for path in fast.values())


def test_merge_summarizes_every_task_over_the_runs_and_keeps_the_last_unseen_result(tmp_path):
    """The suite takes several 10-minute calls on the H200: --merge makes their one table. A task graded in two runs
    is summarized over both runs' gradings; its unseen-config result comes from the later run."""
    def grading(env_id, speedup):
        return {"task": env_id, "label": "baseline", "seed": 0, "speedup": speedup, "correct": True, "score": 220.0}
    env = "KernelArena/triton-cumsum-v0"
    first = {"machine": "NVIDIA H200", "date": "d1", "argv": [], "gradings": [grading(env, 1.02), grading(env, 1.03)],
             "rows": [{"task": "triton-cumsum", "unseen_reference": {"passed": False, "message": "old"}},
                      {"task": "triton-embedding", "not_run": "the budget of 1 s was spent"}]}
    second = {"machine": "NVIDIA H200", "date": "d2", "argv": [],
              "gradings": [grading(env, 1.001), grading(env, 0.999), grading(env, 1.002)],
              "rows": [{"task": "triton-cumsum", "unseen_reference": {"passed": True, "message": "new"}}]}
    paths = []
    for i, data in enumerate((first, second)):
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(data))
    out = tmp_path / "merged.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--merge", *map(str, paths), "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = {r["task"]: r for r in json.loads(out.read_text())["rows"]}
    cumsum = rows["triton-cumsum"]
    assert cumsum["noise_n"] == 5 and abs(cumsum["noise_median"] - 0.002) < 1e-9 and cumsum["noise_ok"]
    assert cumsum["unseen_reference"]["message"] == "new"
    assert rows["triton-embedding"]["not_run"] == "the budget of 1 s was spent"
    assert rows["triton-softmax"]["not_run"] == "in none of the merged runs"
    assert "| triton-cumsum | 0.20% (5) |" in proc.stdout
