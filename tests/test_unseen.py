"""Unseen-config evaluation: generator, private store, quadrants, the wrapper, offline replay.

Kernels written to fail (tests/kernels/) must pass the seen configs and land in opt_regression; an honest
optimization must land in both_pass."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelgym.config_space import violations
from kernelgym.env import KernelArenaEnv
from kernelgym.grader import Grader
from kernelgym.hardware import detect_profile
from kernelgym.discovery import get_task
from kernelgym.unseen import CATEGORIES, evaluate_unseen, generate_unseen_configs, private_dir, quadrant, unseen_configs
from kernelgym.wrappers import UnseenConfigEval

TASK = get_task("triton-rmsnorm")
HW = detect_profile("cpu-interpreter")
KERNELS = Path(__file__).parent / "kernels"
HONEST_FAST = Path(__file__).parent.parent / "benchmarks" / "kernels" / "rmsnorm_fast.py"


def test_generator_deterministic_covers_categories_never_seen():
    a, log = generate_unseen_configs(TASK, seed=3, interpreter=True)
    b, _ = generate_unseen_configs(TASK, seed=3, interpreter=True)
    c, _ = generate_unseen_configs(TASK, seed=4, interpreter=True)
    assert a == b and a != c and len(a) == 8
    assert {x["category"] for x in a} == set(CATEGORIES)
    seen = {(s["rows"], s["hidden"], s["dtype"]) for s in TASK.spec.seen_configs + TASK.spec.interpreter_configs}
    assert not {(x["rows"], x["hidden"], x["dtype"]) for x in a} & seen
    assert all(x["rows"] * x["hidden"] <= 1 << 17 for x in a)
    assert all(violations(TASK.spec.config_space, x) == [] for x in a + c)
    assert any(x["rows"] == 1 and x["hidden"] == 65536 for x in a)  # extreme aspect ratio
    assert any("over the CPU interpreter's budget" in line for line in log)  # production shape shrunk, logged


def test_generator_rejects_configs_the_reference_cannot_run():
    calls = []

    def validate(cfg):
        calls.append(cfg)
        return "reference failed" if cfg["hidden"] == 65536 else None
    configs, log = generate_unseen_configs(TASK, seed=0, interpreter=False, validate=validate)
    assert all(x["hidden"] != 65536 for x in configs) and any("reference failed" in line for line in log)


def test_private_store_is_outside_and_invisible_to_the_sandbox(tmp_path, require_bwrap):
    configs, _ = unseen_configs(TASK, HW, seed=0)
    path = next(private_dir().rglob("*.json"))
    assert json.loads(path.read_text())["configs"] == configs and oct(path.stat().st_mode)[-3:] == "600"
    env = KernelArenaEnv(run_dir=tmp_path / "run", hardware="cpu-interpreter")
    obs, _ = env.reset(seed=0)
    out, *_ = env.step({"kind": "shell", "cmd": f"cat {path}; ls {private_dir()}"})
    assert '"configs"' not in out["output"] and "No such file" in out["output"]
    assert str(private_dir()) not in obs["prompt"]
    env.close()


@pytest.mark.parametrize("orig,opt,expected", [
    ([True, True], [True, True], "both_pass"), ([True, True], [True, False], "opt_regression"),
    ([True, False], [True, False], "both_fail"), ([False, True], [True, True], "opt_improvement")])
def test_quadrants(orig, opt, expected):
    assert quadrant(orig, opt) == expected


def _workspace(tmp_path, kernel):
    ws = tmp_path / "ws"
    ws.mkdir()
    for rel in TASK.public_files():
        shutil.copy(TASK.root / rel, ws / rel)
    shutil.copy(kernel, ws / "kernel.py")
    return ws


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kernel,expected", [("hardcoded_rows.py", "opt_regression"),
                                             ("unmasked.py", "opt_regression"),
                                             ("fp16_accumulate.py", "opt_regression"),
                                             (HONEST_FAST, "both_pass")])
def test_written_to_fail_kernels_regress_honest_one_passes(tmp_path, kernel, expected, require_bwrap):
    ws = _workspace(tmp_path, KERNELS / kernel)  # KERNELS / an absolute path is that path
    seen = Grader(TASK, HW, tmp_path / "seen").grade(ws, seed=1)
    assert seen.score == 120.0, seen.summary()  # every one of them passes the configs it saw
    configs, _ = unseen_configs(TASK, HW, seed=0)
    r = evaluate_unseen(TASK, HW, ws, configs, tmp_path / "unseen", seed=0)
    assert r["quadrant"] == expected, json.dumps(r["configs"], indent=1)
    assert r["original_passed"] == 8
    if expected == "opt_regression":
        assert r["regressions"] >= 1 and r["conditional_correctness"] < 1
    else:
        assert r["conditional_correctness"] == 1.0


@pytest.mark.timeout(600)
def test_wrapper_adds_info_and_gates_reward(tmp_path, require_bwrap):
    env = UnseenConfigEval(KernelArenaEnv(run_dir=tmp_path, hardware="cpu-interpreter"), gate_reward=True)
    env.reset(seed=0)
    env.step({"kind": "write_file", "path": "kernel.py", "content": (KERNELS / "hardcoded_rows.py").read_text()})
    _, reward, terminated, _, info = env.step({"kind": "submit"})
    assert terminated and info["grade"]["score"] == 120.0
    u = info["unseen"]
    assert u["quadrant"] == "opt_regression" and u["reward_gated"] and reward == 20.0
    assert len(u["configs"]) == 8 and u["unseen_speedup"] is None and u["interpreter"]
    assert u["gate"] == "gated: opt_regression" and u["covered"] is False and u["coverage"] == "partial"
    assert u["claim"] == "opt_regression on what was covered" and u["not_covered"][0]["region"] == "elements > 262144"
    assert all(isinstance(r["config"], str) and r["config"].startswith("unseen-") for r in u["configs"])
    env.close()


@pytest.mark.timeout(600)
def test_cli_unseen_replays_a_finished_run(tmp_path, require_bwrap):
    run = subprocess.run([sys.executable, "-m", "kernelgym.cli", "run", "--policy", "scripted", "--policy-config",
                          '{"actions": []}', "--episodes", "2", "--run-dir", str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    (run_dir,) = tmp_path.iterdir()
    # Episode 2's final kernel is replaced by one written to fail, as if an agent had left it there.
    ep2 = sorted((run_dir / "episodes").iterdir())[1]
    shutil.copy(KERNELS / "unmasked.py", ep2 / "workspace" / "kernel.py")
    # A relative path, as a user types it.
    out = subprocess.run([sys.executable, "-m", "kernelgym.cli", "unseen", run_dir.name], capture_output=True,
                         text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    s = json.loads((run_dir / "unseen_summary.json").read_text())
    assert s["quadrants"] == {"both_pass": 1, "opt_regression": 1, "both_fail": 0, "opt_improvement": 0}
    assert s["conditional_correctness"] == 0.5 and "conditional correctness" in out.stdout
    said = " ".join(out.stdout.split())  # the console wraps long lines
    assert s["partially_covered"] == 2 and "2 of 2 episodes covered the config space in part" in said
    assert "elements > 262144 (over the CPU interpreter's budget)" in said
    assert sorted(r["claim"] for r in s["results"]) == ["both_pass on what was covered",
                                                        "opt_regression on what was covered"]
    assert "unseen speedups not measured" in out.stdout


def test_cli_unseen_on_empty_dir_is_clear_error(tmp_path, capsys):
    from kernelgym.cli import main
    assert main(["unseen", str(tmp_path)]) == 2
    assert "no graded episodes" in capsys.readouterr().out


def test_original_results_are_cached(tmp_path, require_bwrap, monkeypatch):
    from kernelgym.unseen import evaluate as ev
    configs, _ = unseen_configs(TASK, HW, seed=0)
    configs = configs[:2]
    ws = _workspace(tmp_path, TASK.root / "kernel.py")
    first = evaluate_unseen(TASK, HW, ws, configs, tmp_path / "u1", seed=0)
    calls = []
    real = ev._grade_each
    monkeypatch.setattr(ev, "_grade_each", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    second = evaluate_unseen(TASK, HW, ws, configs, tmp_path / "u2", seed=0)
    assert calls == [ws]  # only the optimized kernel was graded again
    assert first["quadrant"] == second["quadrant"] == "both_pass"


def test_stored_configs_are_not_the_public_default_seed():
    stored, _ = unseen_configs(TASK, HW, seed=0)
    public, _ = generate_unseen_configs(TASK, 0, interpreter=True)
    assert [c for c in stored] != public  # mixed with the store's secret


def test_candidate_gets_a_fresh_sandbox_per_unseen_config(tmp_path, require_bwrap, monkeypatch):
    started = []
    monkeypatch.setattr(Grader, "start_worker", lambda self, seed=None: started.append(self.work_dir.name))
    configs, _ = unseen_configs(TASK, HW, seed=0)
    evaluate_unseen(TASK, HW, _workspace(tmp_path, TASK.root / "kernel.py"), configs[:2], tmp_path / "u", seed=0)
    assert started == ["original"]  # only the pristine original shares a warm worker


def test_a_kernel_that_hangs_everywhere_stops_at_the_evaluations_budget(tmp_path, require_bwrap):
    """Issue 16: the unseen evaluation has a total budget; configs left when it is spent fail, saying why."""
    from kernelgym.grader import GraderConfig
    configs, _ = unseen_configs(TASK, HW, seed=0)
    hang = (TASK.root / "kernel.py").read_text().replace('    """RMSNorm of', '    while True:\n        pass\n    """RMSNorm of', 1)
    assert "while True" in hang
    ws = tmp_path / "ws"
    shutil.copytree(TASK.root, ws)
    (ws / "kernel.py").write_text(hang)
    result = evaluate_unseen(TASK, HW, ws, configs[:3], tmp_path / "u", GraderConfig(timeout_s=3.0), seed=0,
                             budget_s=1.0)
    errors = [r["optimized_error"] or "" for r in result["configs"]]
    assert "limit" in errors[0] or "killed" in errors[0], errors[0]
    assert all("budget of 1 s was spent" in e for e in errors[1:]), errors
    assert result["optimized_passed"] == 0


def test_not_covered_is_derived_from_the_config_space():
    """Issue 22: what the interpreter's unseen configs leave out comes from the space, not a fixed list."""
    from kernelgym.config_space import ConfigSpace
    from kernelgym.unseen import interpreter_gaps
    from kernelgym.unseen.generator import INTERPRETER_MAX_ELEMENTS, interpreter_gaps_for_space
    assert [g["region"] for g in interpreter_gaps(TASK)] == [f"elements > {INTERPRETER_MAX_ELEMENTS}"]
    matmul = interpreter_gaps(get_task("triton-matmul"))
    assert {"dtype": "bfloat16", "reason": "the interpreter does not run it for this task"} in matmul
    small = ConfigSpace(dims={"rows": {"min": 1, "max": 64}, "hidden": {"min": 1, "max": 1024}},
                        dtypes=["float16", "bfloat16"])
    assert interpreter_gaps_for_space(small) == []  # 65536 elements at most: the interpreter reaches all of it
    capped = ConfigSpace(dims={"rows": {"min": 1, "max": 65536}, "hidden": {"min": 1, "max": 65536}},
                         dtypes=["float16"], max_bytes=3 << 19)  # max_bytes keeps every config under 2^18 elements
    assert interpreter_gaps_for_space(capped) == []
    (gap,) = interpreter_gaps_for_space(small.model_copy(update={"dims": capped.dims}))
    assert gap["reason"] == "over the CPU interpreter's budget" and gap["space_max_elements"] > INTERPRETER_MAX_ELEMENTS


def test_a_gpu_evaluation_covers_every_region_the_interpreter_says_what_it_left_out(tmp_path, monkeypatch):
    from kernelgym.unseen import evaluate as ev
    row = {"compiled": True, "correct": True, "speedup": 1.5, "time_ms": 1.0, "error": None}
    monkeypatch.setattr(ev, "_original_results", lambda *a, **k: [dict(row) for _ in a[2]])
    monkeypatch.setattr(ev, "_grade_each", lambda *a, **k: [dict(row) for _ in a[3]])
    configs = [{"rows": 3, "hidden": 17, "dtype": "float16", "category": "edge"}] * 2
    from kernelgym.hardware import all_profiles
    gpu = evaluate_unseen(TASK, all_profiles()["h200"], tmp_path, configs, tmp_path / "g")
    assert gpu["not_covered"] == [] and gpu["covered"] and gpu["coverage"] == "full" and gpu["claim"] == "both_pass"
    cpu = evaluate_unseen(TASK, HW, tmp_path, configs, tmp_path / "c")
    assert cpu["quadrant"] == "both_pass" and not cpu["covered"] and cpu["claim"] == "both_pass on what was covered"


@pytest.mark.parametrize("quadrant_, covered, allow, compiled, expected", [
    ("both_pass", True, False, True, (False, "passed")),
    ("both_pass", False, False, True, (True, "gated: coverage partial (not run: elements > 262144; dtype bfloat16)")),
    ("both_pass", False, True, True, (False, "passed on what was covered")),
    ("opt_regression", False, True, True, (True, "gated: opt_regression")),
    ("opt_regression", True, False, False, (False, "not compiled")),
    ("opt_improvement", False, False, True, (True, "gated: coverage partial (not run: elements > 262144; dtype "
                                                   "bfloat16)")),
])
def test_the_reward_gate_never_passes_on_coverage_it_does_not_have(quadrant_, covered, allow, compiled, expected):
    from kernelgym.wrappers.unseen import gate_decision
    gaps = [] if covered else [{"region": "elements > 262144", "reason": "r"}, {"dtype": "bfloat16", "reason": "r"}]
    result = {"quadrant": quadrant_, "covered": covered, "not_covered": gaps}
    assert gate_decision(result, compiled, gate_reward=True, allow_partial_coverage=allow) == expected
    assert gate_decision(result, compiled, gate_reward=False) == (False, "off")
