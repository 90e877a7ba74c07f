"""benchmarks/throughput.py (gradings per hour through the env) on the CPU interpreter: nothing is timed here, so
this checks its plumbing (one env graded in a window, the JSON's fields, the CPU time per kind of process) and how it
reads nvidia-smi's samples."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "throughput.py"


def _module():
    spec = importlib.util.spec_from_file_location("throughput_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_samples_give_the_busy_fraction_and_the_peak_memory_and_skip_broken_lines():
    samples = _module()._gpu_samples("40, 1024, 81559\n60, 30720, 81559\n[N/A], 2048, 81559\n70, 20")
    assert samples == (0.5, 30.0, 79.6)
    assert _module()._gpu_samples("") == (None, None, None)


def test_one_env_is_graded_in_its_window_and_the_result_says_nothing_was_timed(tmp_path, require_bwrap):
    out = tmp_path / "throughput.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--task", "triton-rmsnorm", "--envs", "1", "--seconds", "1",
                           "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())["results"][0]
    assert result["envs"] == 1 and result["gradings"] >= 1 and result["errors"] == []
    # The interpreter compiles and checks the kernel but times nothing: 120, no speedup, no GPU samples.
    assert result["rewards"] == [120.0] and result["timed_gradings"] == 0 and result["noise_median"] is None
    assert result["gpu_busy_fraction"] is None and result["gpu_memory_peak_gib"] is None
    assert result["gradings_detail"][0]["phases_s"]["harness"] > 0
    # Once the first grading is done, the rate of the later ones (None where the 1 s window let only one finish).
    later = len(result["gradings_detail"]) - 1
    assert (result["steady_gradings_per_hour"] is None) == (later == 0)
    # Every grading's typed outcome is kept and counted (why a grading fell short of the full score).
    from kernelgym.grader.outcome import OUTCOMES
    assert sum(result["outcomes"].values()) == result["gradings"]
    assert all(g["outcome"] in OUTCOMES for g in result["gradings_detail"])
    # The harness's process, sandboxed and no child of the env's, is found in /proc and its CPU time counted.
    assert result["host_cpu_s_per_grading_by_process"]["harness.py"] > 0


def test_the_steady_rate_counts_the_gradings_after_every_envs_first():
    _steady_rate = _module()._steady_rate
    per_env = [[{"done_at_s": 10.0}, {"done_at_s": 14.0}, {"done_at_s": 18.0}],
               [{"done_at_s": 12.0}, {"done_at_s": 16.0}]]
    assert _steady_rate(per_env) == round(3 * 3600 / (18.0 - 12.0))  # 14, 16 and 18 after the last first (12)
    assert _steady_rate([[{"done_at_s": 10.0}], []]) is None  # an env finished none
    assert _steady_rate([[{"done_at_s": 10.0}]]) is None  # none after the first


def test_a_process_is_known_by_its_python_script_or_module_else_by_its_command(tmp_path):
    kind = _module()._process_kind
    for argv, comm, expected in [([b"/v/bin/python", b"/r/kernelgym/grader/harness.py", b"req.json"], "python", "harness.py"),
                                 ([b"python3", b"-u", b"-m", b"kernelgym.cli", b"run"], "python3", "kernelgym.cli"),
                                 ([b"/usr/bin/bwrap", b"--ro-bind", b"/usr"], "bwrap", "bwrap"),
                                 ([], "kworker/3:1-events", "kworker")]:
        proc = tmp_path / comm.replace("/", "_")
        proc.mkdir()
        (proc / "cmdline").write_bytes(b"\0".join(argv))
        assert kind(str(proc), comm) == expected
