"""bench.py and the env's bench action on the CPU interpreter: the estimate is a labelled model, never a measured
speedup; the interpreter's counts of bytes are deterministic and see a second read; malformed bench actions."""
import re
from pathlib import Path

import pytest

from kernelgym.spaces import ActionError, parse_action

ONE_PASS = (Path(__file__).resolve().parents[1] / "kernelgym" / "policies" / "tuner" / "rewrites" /
            "rmsnorm_one_pass.py").read_text()
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
