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
