"""The grading cache (kernelgym/grader/cache.py): a baseline's observation made once per host (N processes at once
included), read back by a new process, made again when stale or unreadable; keys that change with everything an
entry depends on."""
import json
import shutil
import subprocess
import sys
import time

import pytest

from kernelgym.grader import cache as cache_module
from kernelgym.grader.cache import GradingCache, baseline_key
from kernelgym.grader.observer import Kernel, Observation

OBS = Observation(before=[Kernel("warm", 5.0)], checked=[[Kernel("rms_norm_kernel", 1500.0)], []],
                  after=[Kernel("tail", 1.0)])

MAKE_IN_A_PROCESS = """
import sys, time
from pathlib import Path
from kernelgym.grader.cache import GradingCache
from kernelgym.grader.observer import Kernel, Observation
root, log = Path(sys.argv[1]), Path(sys.argv[2])
def make():
    with log.open("a") as f:
        f.write("made\\n")
    time.sleep(0.5)  # long enough that the other processes ask while this one observes
    return Observation(before=[], checked=[[Kernel("k", 7.0)]])
obs = GradingCache(root).observation("key", make)
print(obs.checked_ms(0))
"""


def test_made_once_by_one_of_several_processes_and_read_by_the_rest(tmp_path):
    log = tmp_path / "made.log"
    procs = [subprocess.Popen([sys.executable, "-c", MAKE_IN_A_PROCESS, str(tmp_path / "c"), str(log)],
                              stdout=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outs == ["7e-06"] * 3
    assert log.read_text().count("made") == 1


def test_round_trip_and_memory(tmp_path):
    calls = []
    first = GradingCache(tmp_path).observation("k1", lambda: calls.append(1) or OBS)
    again = GradingCache(tmp_path).observation("k1", lambda: calls.append(2) or OBS)  # a new process's cache: disk
    assert calls == [1] and again == OBS and first is OBS


def test_stale_or_unreadable_entries_are_made_again(tmp_path, monkeypatch):
    GradingCache(tmp_path).observation("k", lambda: OBS)
    path = tmp_path / "k" / "observation.json"
    data = json.loads(path.read_text())
    data["made_at"] = time.time() - cache_module.MAX_AGE_S - 1
    path.write_text(json.dumps(data))
    calls = []
    GradingCache(tmp_path).observation("k", lambda: calls.append("stale") or OBS)
    path.write_text("{not json")
    GradingCache(tmp_path).observation("k", lambda: calls.append("unreadable") or OBS)
    assert calls == ["stale", "unreadable"]


def test_a_failed_observation_is_not_kept(tmp_path):
    cache = GradingCache(tmp_path)
    with pytest.raises(RuntimeError):
        cache.observation("k", lambda: (_ for _ in ()).throw(RuntimeError("CUPTI refused")))
    assert not cache.observed("k") and not (tmp_path / "k" / "observation.json").exists()
    assert cache.observation("k", lambda: OBS) == OBS


def test_memory_only_where_the_folder_cannot_be_written(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = GradingCache(blocker / "below")  # a path under a regular file: nothing can be made there
    calls = []
    assert cache.observation("k", lambda: calls.append(1) or OBS) == OBS
    assert cache.observation("k", lambda: calls.append(2) or OBS) == OBS and calls == [1]


def test_kernels_kept_once_and_a_second_copy_loses(tmp_path):
    src_a, src_b = tmp_path / "a", tmp_path / "b"
    for src, data in ((src_a, b"first"), (src_b, b"second")):
        (src / "H").mkdir(parents=True)
        (src / "H" / "k.cubin").write_bytes(data)
    cache = GradingCache(tmp_path / "c")
    assert cache.keep_kernels("k", src_a) and cache.keep_kernels("k", src_b)
    dest = tmp_path / "dest"
    assert cache.seed_kernels("k", dest) > 0 and (dest / "H" / "k.cubin").read_bytes() == b"first"
    assert cache.seed_kernels("other", tmp_path / "none") == 0


def test_the_key_follows_the_task_files_configs_and_tool(tmp_path):
    task = tmp_path / "task"
    shutil.copytree(__import__("kernelgym.discovery", fromlist=["get_task"]).get_task("triton-rmsnorm").root, task)
    configs = [{"rows": 4, "hidden": 8}]
    key = baseline_key(task, "h200", configs, "bwrap", "tracer")
    assert key == baseline_key(task, "h200", configs, "bwrap", "tracer")
    assert key != baseline_key(task, "h200", configs, "bwrap", "ncu")
    assert key != baseline_key(task, "h200", [{"rows": 8, "hidden": 8}], "bwrap", "tracer")
    assert key != baseline_key(task, "b200", configs, "bwrap", "tracer")
    (task / "kernel.py").write_text((task / "kernel.py").read_text() + "\n# edited\n")
    assert key != baseline_key(task, "h200", configs, "bwrap", "tracer")


def test_task_only_work_is_done_once_per_process_and_task_files(tmp_path):
    from kernelgym.grader.cache import GradingCache, task_config_key
    cache = GradingCache(tmp_path / "c")
    task = tmp_path / "task"
    task.mkdir()
    (task / "task.yaml").write_text("a: 1\n")
    key = task_config_key(task, {"n": 1})
    assert cache.first_time(key) and not cache.first_time(key)
    assert cache.first_time(task_config_key(task, {"n": 2}))  # another config
    (task / "task.yaml").write_text("a: 2\n")  # edited tolerances: checked again
    assert cache.first_time(task_config_key(task, {"n": 1}))
