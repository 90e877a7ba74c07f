"""Reference-format task folders (kernelgym/reference_tasks): discovery and where each runs, the AKA-GENERATED
helper block, grading by the folders' own commands on the CPU interpreter (and the verdicts of those commands run
directly), the speedup from their performance reports, `kernelgym list`/`run`/`validate` on them."""
import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import gymnasium as gym
import pytest

import kernelgym
from kernelgym.cli import main as cli_main
from kernelgym.grader.grader import NOT_MEASURED_ON_INTERPRETER
from kernelgym.hardware import all_profiles
from kernelgym.reference_tasks import (UnsupportedTaskError, discover_reference_tasks, load_reference_task,
                                       unsupported_reason)
from kernelgym.reference_tasks.grader import (command_line, compare_cases, prepare_dir,
                                              read_performance_report)
from kernelgym.reference_tasks.placeholder import (BEGIN, END, PlaceholderError, find_block, helpers_source,
                                                   materialize)
from kernelgym.validate import validate_task

DATA = Path(__file__).parent / "data" / "reference_tasks"
VLLM, ROCM = DATA / "vllm_silu_and_mul", DATA / "rocmbench_add_kernel"
ENV_ID = {VLLM: "KernelArena/triton2triton-vllm_silu_and_mul-v0",
          ROCM: "KernelArena/triton2triton-rocmbench_add_kernel-v0"}
SKIP_ID = "KernelArena/triton2triton-amd_only_skip-v0"
#: (file, old, new) per task: an edit that breaks correctness, and one that breaks compilation.
WRONG = {VLLM: ("source/silu_and_mul.py", "* b\n", "* b * 2.0\n"), ROCM: ("test_add_kernel.py", "x + y, mask", "x - y, mask")}
SYNTAX = {VLLM: ("source/silu_and_mul.py", "def silu_and_mul(", "def silu_and_mul(:"),
          ROCM: ("test_add_kernel.py", "def add(", "def add(:")}


@pytest.fixture
def registered():
    ids = kernelgym.register_tasks(tasks_dir=DATA)
    yield ids
    for env_id in [*ENV_ID.values(), SKIP_ID, "KernelArena/triton2triton-amd_fp8_fnuz-v0"]:
        gym.registry.pop(env_id, None)


# -- discovery and support -----------------------------------------------------------------------------------------
def test_discovery_finds_the_folders_and_says_where_each_runs():
    tasks, problems = discover_reference_tasks(DATA)
    assert problems == []
    assert sorted(tasks) == ["triton2triton-amd_fp8_fnuz", "triton2triton-amd_only_skip",
                             "triton2triton-rocmbench_add_kernel", "triton2triton-vllm_silu_and_mul"]
    profiles = all_profiles()
    for name in ("triton2triton-rocmbench_add_kernel", "triton2triton-vllm_silu_and_mul"):
        assert all(unsupported_reason(tasks[name], p) is None for p in profiles.values())
    for pid in profiles:  # skip: unsupported everywhere, with its own reason
        assert "needs MI300X matrix cores (test fixture)" in unsupported_reason(tasks["triton2triton-amd_only_skip"],
                                                                                 profiles[pid])
    fnuz = tasks["triton2triton-amd_fp8_fnuz"]
    assert unsupported_reason(fnuz, profiles["mi300x"]) is None
    h200 = unsupported_reason(fnuz, profiles["h200"])
    assert "float8_e4m3fnuz" in h200 and "waves_per_eu" in h200
    # gfx950 has OCP fp8, not fnuz; its launch options are AMD's
    assert "float8_e4m3fnuz" in unsupported_reason(fnuz, profiles["mi355x"])
    assert "waves_per_eu" not in unsupported_reason(fnuz, profiles["mi355x"])
    assert "needs another AMD GPU than gfx950" in unsupported_reason(fnuz, profiles["mi355x"])


def test_unsupported_task_is_a_clear_error_from_make(registered, tmp_path):
    assert SKIP_ID in registered and ENV_ID[VLLM] in registered
    with pytest.raises(UnsupportedTaskError, match=r"status is skip: needs MI300X matrix cores"):
        gym.make(SKIP_ID, tasks_dir=str(DATA), run_dir=tmp_path)
    with pytest.raises(UnsupportedTaskError, match=r"float8_e4m3fnuz"):
        gym.make("KernelArena/triton2triton-amd_fp8_fnuz-v0", run_dir=tmp_path)


def test_list_shows_reference_tasks_with_reasons(monkeypatch):
    import io

    from rich.console import Console

    from kernelgym import cli
    buf = io.StringIO()
    monkeypatch.setattr(cli, "console", Console(file=buf, width=1000))  # wide: no cell wraps
    assert cli_main(["list", "--tasks-dir", str(DATA)]) == 0
    rows = {line.split("│")[1].strip(): line for line in buf.getvalue().splitlines() if "KernelArena/triton2triton" in line}
    skip = rows["KernelArena/triton2triton-amd_only_skip-v0"]
    assert "platform_support.status is skip: needs MI300X matrix cores (test fixture)" in skip
    assert "cpu-interpreter, h100, h200, mi300x, mi355x:" in skip
    assert "h100, h200: needs AMD hardware" in rows["KernelArena/triton2triton-amd_fp8_fnuz-v0"]
    assert "cpu-interpreter, h100, h200, mi300x, mi355x" in rows["KernelArena/triton2triton-vllm_silu_and_mul-v0"]


# -- the helper block ------------------------------------------------------------------------------------------------
def test_placeholder_block_is_replaced_by_kernelgyms_helpers():
    text = (VLLM / "scripts" / "task_runner.py").read_text()
    assert "were not materialized" in text
    out = materialize(text)
    assert "were not materialized" not in out and "def _benchmark_cuda_graph_or_events" in out
    assert "def _measure_cuda_event_fallback" in out and out.count(BEGIN) == 1 and out.count(END) == 1
    assert materialize(out) == out  # a workspace materialized once is graded the same
    compile(out, "task_runner.py", "exec")
    with pytest.raises(PlaceholderError, match="closing line"):
        find_block(text.replace(END, "# end"), "task_runner.py")
    assert materialize("x = 1\n") == "x = 1\n"


def test_cpu_helpers_say_not_timed_and_still_run_the_function():
    namespace, calls = {}, []
    exec(compile(helpers_source(), "helpers", "exec"), namespace)
    ms, meta = namespace["_benchmark_cuda_graph_or_events"](lambda: calls.append(1), warmup=10, repetition=100)
    assert math.isnan(ms) and meta["benchmark_method"] == "not_timed" and "CPU" in meta["benchmark_not_timed_reason"]
    assert calls == [1]
    times = namespace["_measure_cuda_event_fallback"](lambda: calls.append(2), 5)
    assert len(times) == 5 and all(math.isnan(t) for t in times) and calls == [1, 2]


def _fake_torch(elapsed_ms: list, capture_error: str | None = None):
    """A stand-in `torch` module with just the CUDA calls the helpers make; each Event.elapsed_time takes the next
    value of `elapsed_ms`; graph capture raises `capture_error` where given."""
    import contextlib
    import types

    class Event:
        def __init__(self, enable_timing=False):
            pass

        def record(self):
            pass

        def elapsed_time(self, end):
            return elapsed_ms.pop(0)

    class Stream:
        def wait_stream(self, other):
            pass

    class Graph:
        def replay(self):
            pass

    @contextlib.contextmanager
    def graph(g):
        if capture_error:
            raise RuntimeError(capture_error)
        yield

    cuda = types.SimpleNamespace(
        is_available=lambda: True, Event=Event, Stream=Stream, current_stream=Stream, synchronize=lambda: None,
        stream=lambda s: contextlib.nullcontext(), CUDAGraph=Graph, graph=graph, current_device=lambda: 0,
        get_device_properties=lambda i: types.SimpleNamespace(L2_cache_size=1024))
    flushes = []
    fake = types.SimpleNamespace(cuda=cuda, int32="int32",
                                 empty=lambda *a, **k: types.SimpleNamespace(zero_=lambda: flushes.append(1)))
    return fake, flushes


def test_gpu_helpers_replay_a_graph_of_enough_calls(monkeypatch):
    # One call estimated at 0.1 ms: a graph of 10 calls lasts the 1 ms target; each replay reads 2 ms.
    fake, _ = _fake_torch([0.1] + [2.0] * 8)
    monkeypatch.setitem(__import__("sys").modules, "torch", fake)
    namespace, calls = {}, []
    exec(compile(helpers_source(), "helpers", "exec"), namespace)
    ms, meta = namespace["_benchmark_cuda_graph_or_events"](lambda: calls.append(1), warmup=3, repetition=8)
    assert ms == pytest.approx(0.2) and meta["benchmark_method"] == "cuda_graph"
    assert meta["benchmark_effective_repeats"] == 10 and len(calls) == 3 + 1 + 10  # warm-up, estimate, capture


def test_gpu_helpers_fall_back_to_events_where_capture_fails(monkeypatch):
    # Per-call samples 1, 2, ..., 8 ms: the interquartile mean keeps 3..6.
    fake, flushes = _fake_torch([0.5] + [float(i) for i in range(1, 9)], capture_error="operation not permitted")
    monkeypatch.setitem(__import__("sys").modules, "torch", fake)
    namespace = {}
    exec(compile(helpers_source(), "helpers", "exec"), namespace)
    ms, meta = namespace["_benchmark_cuda_graph_or_events"](lambda: None, warmup=2, repetition=8)
    assert meta["benchmark_method"] == "cuda_event_fallback" and "operation not permitted" in meta[
        "benchmark_fallback_reason"]
    assert ms == pytest.approx(4.5) and len(flushes) == 8  # the L2 flushed before each timed call


# -- grading on the interpreter --------------------------------------------------------------------------------------
def _edit(workspace: Path, edit) -> None:
    rel, old, new = edit
    text = (workspace / rel).read_text()
    assert text.count(old) == 1
    (workspace / rel).write_text(text.replace(old, new))


def _own_verdicts(task_dir: Path, workspace: Path, dest: Path) -> dict[str, bool]:
    """The format's own verdicts: its compile and correctness commands run directly (no kernelgym sandbox) in a copy
    holding `workspace`'s sources; a stage passes when each command exits 0 and its report, if any, says ok."""
    task = load_reference_task(task_dir)
    dest.mkdir()
    assert prepare_dir(task, dest, workspace) == []
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    verdicts = {}
    for stage in ("compile", "correctness"):
        ok = all(subprocess.run(command_line(c), shell=True, cwd=dest, env=env, capture_output=True,
                                timeout=600).returncode == 0 for c in getattr(task.spec, f"{stage}_command"))
        report = dest / "build" / f"{stage}_report.json"
        if ok and report.exists():
            ok = json.loads(report.read_text())["status"] == "ok"
        verdicts[stage] = ok
        if not ok:
            break
    return verdicts


@pytest.mark.parametrize("task_dir", [VLLM, ROCM], ids=["vllm", "rocmbench"])
def test_baseline_scores_120_and_agrees_with_the_formats_own_verdict(task_dir, registered, tmp_path, require_bwrap):
    env = gym.make(ENV_ID[task_dir], tasks_dir=str(DATA), run_dir=tmp_path / "runs")
    obs, info = env.reset(seed=0)
    assert "Editable (only these are graded)" in obs["prompt"]
    ws = env.unwrapped.workspace
    assert "were not materialized" not in "".join(p.read_text() for p in ws.rglob("*.py"))  # helpers in the workspace
    obs, reward, terminated, truncated, info = env.step({"kind": "submit"})
    env.close()
    assert terminated and reward == 120.0
    stages = {s["name"]: s for s in info["grade"]["stages"]}
    assert stages["compile"]["passed"] and stages["correctness"]["passed"]
    assert stages["performance"]["passed"] is None and stages["performance"]["messages"] == [NOT_MEASURED_ON_INTERPRETER]
    assert info["grade"]["speedup"] is None
    assert _own_verdicts(task_dir, ws, tmp_path / "own") == {"compile": True, "correctness": True}


@pytest.mark.parametrize("task_dir", [VLLM, ROCM], ids=["vllm", "rocmbench"])
@pytest.mark.parametrize("broken", ["wrong", "syntax"])
def test_broken_edit_fails_its_gate_with_the_commands_output(task_dir, broken, registered, tmp_path, require_bwrap):
    env = gym.make(ENV_ID[task_dir], tasks_dir=str(DATA), run_dir=tmp_path / "runs")
    env.reset(seed=0)
    ws = env.unwrapped.workspace
    _edit(ws, (WRONG if broken == "wrong" else SYNTAX)[task_dir])
    obs, reward, terminated, truncated, info = env.step({"kind": "submit"})
    env.close()
    stages = {s["name"]: s for s in info["grade"]["stages"]}
    own = _own_verdicts(task_dir, ws, tmp_path / "own")
    if broken == "wrong":
        assert reward == 20.0 and stages["compile"]["passed"] and stages["correctness"]["passed"] is False
        assert own == {"compile": True, "correctness": False}
        expected = "max diff" if task_dir == VLLM else "Mismatched elements"
        assert expected in obs["output"] and "correctness" in obs["output"]
    else:
        assert reward == 0.0 and stages["compile"]["passed"] is False and stages["correctness"]["passed"] is None
        assert own == {"compile": False}
        assert "SyntaxError" in obs["output"] or "invalid syntax" in obs["output"]


def test_a_symlinked_source_file_fails_compile(registered, tmp_path, require_bwrap):
    env = gym.make(ENV_ID[ROCM], tasks_dir=str(DATA), run_dir=tmp_path / "runs")
    env.reset(seed=0)
    ws = env.unwrapped.workspace
    (ws / "test_add_kernel.py").unlink()
    (ws / "test_add_kernel.py").symlink_to("/etc/passwd")
    _, reward, *_, info = env.step({"kind": "submit"})
    env.close()
    assert reward == 0.0 and "symlink" in info["grade"]["stages"][0]["messages"][0]


def test_profile_and_bench_actions_answer_with_an_error(registered, tmp_path, require_bwrap):
    env = gym.make(ENV_ID[ROCM], tasks_dir=str(DATA), run_dir=tmp_path / "runs")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step({"kind": "bench"})
    env.close()
    assert not terminated and "needs a kernelgym task" in obs["output"] and info["action_error"]


# -- performance: the speedup from the reports -----------------------------------------------------------------------
def test_compare_cases_matches_params_and_counts_a_failed_case_as_zero():
    base = {json.dumps({"n": 1}): ({"n": 1}, 2.0), json.dumps({"n": 2}): ({"n": 2}, 4.0),
            json.dumps({"n": 3}): ({"n": 3}, -1.0)}
    cand = {json.dumps({"n": 2}): ({"n": 2}, 2.0), json.dumps({"n": 1}): ({"n": 1}, -1.0)}
    rows, ratios, problems = compare_cases(base, cand)
    assert ratios == [0.0, 2.0] and len(rows) == 2
    assert any("failed (-1)" in p for p in problems) and any("baseline failed" in p for p in problems)


def test_rocmbench_report_is_read_from_perf(tmp_path):
    (tmp_path / "perf").mkdir()
    (tmp_path / "perf" / "benchmark_results.json").write_text(json.dumps(
        [{"params": {"size": 2, "dtype": "fp16"}, "timing_ms": {"mean": 0.5}}, {"params": {"size": 3}, "timing_ms": {}}]))
    cases, error = read_performance_report(tmp_path)
    assert error is None
    assert cases[json.dumps({"dtype": "fp16", "size": 2}, sort_keys=True)][1] == 0.5
    assert cases[json.dumps({"size": 3})][1] == -1.0


PERF_RUNNER = """import json, os
times = json.load(open("times.json"))
os.makedirs("build", exist_ok=True)
json.dump([{"test_case_id": k, "execution_time_ms": v, "params": {"case": k}} for k, v in times.items()],
          open("build/performance_report.json", "w"))
"""


@pytest.mark.parametrize("candidate,score,passed", [({"b": 4.0, "a": 1.0}, 270.0, True),
                                                    ({"a": 1.0, "b": -1.0}, 220.0, False)])
def test_gpu_path_scores_the_mean_speedup(candidate, score, passed, timed_reference_task):
    # A task whose "kernel" is its times: the baseline's file says 2 ms and 4 ms.
    grader, ws = timed_reference_task("times.json", json.dumps({"a": 2.0, "b": 4.0}), json.dumps(candidate),
                                      PERF_RUNNER, rounds=2)
    grade = grader.grade(ws)
    assert grade.score == pytest.approx(score) and grade.stages[2].passed is passed
    assert {r["config"]["case"]: r["speedup"] for r in grade.configs} == {"a": 2.0, "b": 1.0 if passed else 0.0}


# -- validate and the CLI --------------------------------------------------------------------------------------------
def _copy(tmp_path: Path, src: Path) -> Path:
    dest = tmp_path / src.name
    shutil.copytree(src, dest)
    return dest


def test_validate_passes_the_test_folders(require_bwrap):
    for task_dir in (VLLM, ROCM):
        checks = validate_task(task_dir, hardware="cpu-interpreter")
        assert [c.passed for c in checks] == [True] * 6, [(c.name, c.message) for c in checks]


def test_validate_catches_a_broken_config(tmp_path):
    task_dir = _copy(tmp_path, VLLM)
    config = (task_dir / "config.yaml").read_text()
    (task_dir / "config.yaml").write_text(config.replace("correctness_command:\n  - python3 scripts/task_runner.py "
                                                         "correctness\n", ""))
    checks = validate_task(task_dir, hardware="cpu-interpreter")
    assert checks[0].name == "config.yaml loads" and checks[0].passed is False
    assert "`correctness_command`: Field required" in checks[0].message
    assert all(c.passed is None for c in checks[1:])

    (task_dir / "config.yaml").write_text(config.replace("task_runner.py compile", "missing_runner.py compile")
                                          .replace("task_runner.py performance", "task_runner.py 'performance"))
    checks = {c.name: c for c in validate_task(task_dir, hardware="cpu-interpreter")}
    assert checks["commands"].passed is False
    assert "scripts/missing_runner.py" in checks["commands"].message and "does not parse" in checks["commands"].message
    assert checks["baseline passes its own commands"].passed is None


def test_validate_catches_a_broken_helper_block(tmp_path):
    task_dir = _copy(tmp_path, VLLM)
    runner = task_dir / "scripts" / "task_runner.py"
    runner.write_text(runner.read_text().replace(END, "# end of helpers"))
    checks = {c.name: c for c in validate_task(task_dir, hardware="cpu-interpreter")}
    assert checks["benchmark helpers"].passed is False and "closing line" in checks["benchmark helpers"].message


def test_validate_says_a_skip_task_is_not_supported_here():
    checks = {c.name: c for c in validate_task(DATA / "amd_only_skip", hardware="cpu-interpreter")}
    assert checks["hardware"].passed is None and "needs MI300X matrix cores" in checks["hardware"].message
    assert checks["baseline passes its own commands"].passed is None


def test_cli_validate_finds_a_reference_task_by_name(capsys):
    assert cli_main(["validate", "triton2triton-amd_only_skip", "--tasks-dir", str(DATA),
                     "--hardware", "cpu-interpreter"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "config.yaml loads" in out and "needs MI300X" in out


def test_cli_run_grades_a_reference_task_and_logs_the_trajectory(tmp_path, require_bwrap):
    code = cli_main(["run", "--tasks-dir", str(DATA), "--task", "triton2triton-rocmbench_add_kernel", "--policy",
                     "scripted", "--policy-config", json.dumps({"actions": [{"kind": "shell", "cmd": "ls"}]}),
                     "--run-dir", str(tmp_path)])
    assert code == 0
    (run_dir,) = tmp_path.iterdir()
    results = json.loads((run_dir / "results.json").read_text())
    assert results[0]["grade"]["score"] == 120.0 and results[0]["steps"] == 2
    events = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    assert "test_add_kernel.py" in events[0]["observation"]["prompt"]
    assert any("test_add_kernel.py" in json.dumps(e.get("observation", {})) for e in events[1:])


def test_unseen_replay_of_a_reference_task_episode_says_why_not(tmp_path):
    from kernelgym.errors import TaskSpecError
    from kernelgym.unseen.replay import replay_run
    folder = Path(__file__).resolve().parent / "data" / "reference_tasks" / "vllm_silu_and_mul"
    ep = tmp_path / "episodes" / "ep1"
    ep.mkdir(parents=True)
    (ep / "episode.json").write_text(json.dumps({"task_dir": str(folder), "task": "x", "hardware": "cpu-interpreter"}))
    (ep / "grade.json").write_text(json.dumps({"score": 120.0}))
    with pytest.raises(TaskSpecError, match="no unseen configs"):
        replay_run(tmp_path)
