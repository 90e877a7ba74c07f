"""bench.py and the env's bench action on the CPU interpreter: the estimate is a labelled model, never a measured
speedup; the interpreter's counts of bytes are deterministic and see a second read; malformed bench actions."""
import re

import pytest

from kernelgym.policy import DEFAULT_POLICIES_ROOT
from kernelgym.spaces import ActionError, parse_action

ONE_PASS = (DEFAULT_POLICIES_ROOT / "tuner" / "rewrites" / "rmsnorm_one_pass.py").read_text()
SUMMARY = re.compile(r"BENCH kind=(\w+) speedup_mean=(\S+) speedup_geomean=(\S+) band=\S+ bytes_ratio=(\S+) configs=(\d+)")
BYTES = re.compile(r"^config (\d+) .*?: original (\d+) B .*?\| yours (\d+) B", re.M)


def _bench(env, *, source=None):
    if source is not None:
        env.step({"kind": "write_file", "path": "kernel.py", "content": source})
    obs, reward, terminated, truncated, info = env.step({"kind": "bench"})
    assert reward == 0.0 and not terminated and info["action_error"] == ""
    return obs["output"]


def test_bench_on_the_interpreter_is_a_labelled_model_never_a_measurement(env):
    env.reset(seed=0)
    out = _bench(env)
    assert "exit code 0" in out, out
    assert "ADVISORY" in out and "MODEL, not a measurement" in out and "never in the reward" in out
    assert "NVIDIA H200 (h200)" in out  # the profile the model targets, said
    assert "measured" not in out.lower().replace("not measured", ""), out
    (kind, mean, geo, ratio, n), = SUMMARY.findall(out)
    assert kind == "model" and int(n) == 3
    assert float(mean) == pytest.approx(1.0) and float(geo) == pytest.approx(1.0) and float(ratio) == 1.0


def test_bytes_are_counted_deterministically_and_a_second_read_costs_more(env):
    env.reset(seed=0)
    first, second = _bench(env), _bench(env)
    assert BYTES.findall(first) == BYTES.findall(second) and BYTES.findall(first)
    for _, original, yours in BYTES.findall(first):
        assert original == yours  # the original against itself
    one_pass = _bench(env, source=ONE_PASS)
    rows = BYTES.findall(one_pass)
    assert len(rows) == 3
    for i, original, yours in rows:
        assert int(yours) < int(original), one_pass  # x read once instead of twice
    (kind, mean, _, ratio, _), = SUMMARY.findall(one_pass)
    assert kind == "model" and float(ratio) < 1.0 and float(mean) > 1.0
    assert one_pass.count("est. speedup") == 3 and "(model)" in one_pass


def test_bench_check_option_skips_a_wrong_kernel(env):
    env.reset(seed=0)
    env.step({"kind": "edit_file", "path": "kernel.py", "old": "y = x * rstd * w", "new": "y = x * w"})
    obs, *_ = env.step({"kind": "shell", "cmd": "python bench.py --check"})
    assert re.search(r"CHECK correct=[012]/3", obs["output"]) and "BENCH skipped" in obs["output"]
    assert "BENCH kind=" not in obs["output"]


def test_bench_action_parsing():
    assert parse_action({"kind": "bench"}).kind == "bench"
    assert parse_action('{"kind": "bench"}').kind == "bench"
    for bad in ({"kind": "bench", "cmd": "rm -rf ."}, {"kind": "bench", "path": "kernel.py"}, {"kind": "bench", "config": 2},
                {"kind": "bench", "config": -1}):
        with pytest.raises(ActionError):
            parse_action(bad)


def test_malformed_bench_action_is_an_error_observation(env):
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step({"kind": "bench", "cmd": "python check.py"})
    assert obs["output"].startswith("error:") and "takes no fields" in obs["output"]
    assert info["action_error"] and reward == 0.0 and not terminated and not truncated


def test_the_estimate_never_enters_the_reward(env):
    env.reset(seed=0)
    _bench(env, source=ONE_PASS)
    obs, reward, terminated, truncated, info = env.step({"kind": "submit"})
    assert terminated and reward == 120.0 and info["grade"]["speedup"] is None


STAND_IN = r'''
import importlib.util, os, sys, time
from types import SimpleNamespace
import torch
ws = sys.argv[1]
spec = importlib.util.spec_from_file_location("bench_under_test", os.path.join(ws, "bench.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
bench.DEVICE = "cpu"
harness, stats = bench.grader_code()


class Event:
    def __init__(self, enable_timing=False, external=False):
        self.t = None


def no_cuda():
    raise RuntimeError("no CUDA here")


harness._Event, harness._synchronize, harness._capture_stream = Event, (lambda: None), no_cuda
harness._record = lambda ev: setattr(ev, "t", time.perf_counter())
harness._elapsed = lambda s, e: (e.t - s.t) * 1000
torch.cuda.synchronize = lambda *a: None
bench.SETTINGS["flush_bytes"] = 1 << 20
bench.measure(SimpleNamespace(full=False, warmup=1, reps=4, rounds=2), [0, 1])
'''


def test_measured_path_runs_the_graders_timing_code(tmp_path):
    """The GPU path's plumbing, on a stand-in device (CPU events, eager calls on the interpreter): the grader's
    Timed/time_pair and timing_stats run, and the report has the measured format. The numbers mean nothing here."""
    import os
    import subprocess
    import sys

    from kernelgym.discovery import get_task
    from kernelgym.estimate import install_bench
    from kernelgym.hardware import detect_profile
    from kernelgym.workspace import create_workspace
    task, hw = get_task("triton-rmsnorm"), detect_profile("cpu-interpreter")
    ws = create_workspace(task, tmp_path / "ws", hw)
    install_bench(task, ws, hw)
    (ws / "kernel.py").write_text(ONE_PASS)
    proc = subprocess.run([sys.executable, "-c", STAND_IN, str(ws)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITON_INTERPRET": "1"}, cwd=ws)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "method: MEASURED on cpu with the grader's timing code" in out and "MODEL" not in out
    assert len(re.findall(r"^config \d .*speedup [0-9.]+x \(band [0-9.]+\.\.[0-9.]+\)", out, re.M)) == 2, out
    assert "events+sync" in out and re.search(r"BENCH kind=measured speedup_mean=[0-9.]+ .* configs=2", out), out
