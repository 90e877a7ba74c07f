"""The harness's dynamic check (harness.OpRecorder, GraderConfig.dynamic_check): which operators every built-in Triton
baseline runs, how a task's `allowed_torch_ops` reach the harness, and where the check runs. The attacks it blocks are
tests/attacks/host_tensor_arithmetic.py."""
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.grader import checks as grade_checks
from kernelgym.grader.protocol import ALLOWED_TORCH_OPS, ProtocolError, Request
from kernelgym.hardware import detect_profile
from kernelgym.task import load_task

HARNESS = os.path.join(os.path.dirname(__file__), "..", "kernelgym", "grader", "harness.py")

# Runs every built-in Triton baseline on its interpreter configs through harness.recorded_call, under the launch
# counter, and prints {task: error or null}.
RUN_BASELINES = '''
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("harness", sys.argv[1])
harness = importlib.util.module_from_spec(spec)
spec.loader.exec_module(harness)
from kernelgym.discovery import discover_tasks
from kernelgym.grader.protocol import load_function
backend = harness.load_backend("triton")
results = {}
for name, task in sorted(discover_tasks().items()):
    if task.spec.language != "triton":
        continue
    counter = backend.LaunchCounter(str(task.root))
    build = load_function(task.spec.input_builder, str(task.root), "inputs_" + name)
    sys.path.insert(0, str(task.root))
    fn = load_function(task.spec.entry_point, str(task.root), "kernel_" + name)
    sys.path.pop(0)
    allowed = harness.protocol.ALLOWED_TORCH_OPS | frozenset(task.spec.allowed_torch_ops)
    error = None
    for config in task.configs_for(True):
        counter.reset()
        try:
            harness.recorded_call(fn, build(config, 0, "cpu"), allowed)
            assert counter.count > 0, "no launch counted"
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
    results[name] = error
print(json.dumps(results))
'''


def test_every_built_in_triton_baseline_runs_only_allowed_operators():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, "-c", RUN_BASELINES, HARNESS], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(results) == 24
    assert {name: error for name, error in results.items() if error} == {}


def test_the_request_carries_the_check_and_refuses_what_is_not_an_operator_name():
    task = get_task("triton-rmsnorm")
    grader = Grader(task, detect_profile("cpu-interpreter"), "/nonexistent", GraderConfig())
    req = grader._request(grader.work_dir / "g", 1, timed=False).to_json()
    assert req["dynamic_check"] is True and req["allowed_torch_ops"] == []
    assert Request.from_json(req).dynamic_check is True
    with pytest.raises(ProtocolError, match="allowed_torch_ops"):
        Request.from_json({**req, "allowed_torch_ops": [1]})
    with pytest.raises(ProtocolError, match="dynamic_check"):
        Request.from_json({**req, "dynamic_check": "yes"})
    off = Grader(task, detect_profile("cpu-interpreter"), "/nonexistent", GraderConfig(dynamic_check=False))
    assert off._request(off.work_dir / "g", 1, timed=False).dynamic_check is False


def test_where_the_observer_runs_the_check_is_off_and_says_why(monkeypatch):
    grader = Grader(get_task("triton-rmsnorm"), detect_profile("cpu-interpreter"), "/nonexistent", GraderConfig())
    monkeypatch.setattr(grader, "observer_unavailable", lambda: None)
    assert grader._request(grader.work_dir / "g", 1, timed=False).dynamic_check is False
    monkeypatch.setattr(grader, "session", type("S", (), {"gdir": grader.work_dir / "g"})())
    assert grade_checks.planned(grader, [], True)["dynamic_check"].startswith("off: the outside observer")


def test_the_allowed_list_is_allocation_views_copies_and_fills():
    assert {"empty", "view", "copy_", "fill_", "set_"} <= ALLOWED_TORCH_OPS
    assert not {"mul", "add", "index", "sum", "mm", "arange", "_local_scalar_dense"} & ALLOWED_TORCH_OPS


# A wrapper that builds a row index with torch.arange (unused by the kernel): legitimate only where the task says so.
ARANGE = (get_task("triton-rmsnorm").root / "kernel.py").read_text().replace(
    "    y = torch.empty_like(x2)\n", "    y = torch.empty_like(x2)\n    rows = torch.arange(x2.shape[0])\n")


@pytest.mark.parametrize("declared", [True, False])
def test_a_tasks_allowed_torch_ops_reach_the_harness(tmp_path, require_bwrap, declared):
    assert "torch.arange" in ARANGE
    root = tmp_path / "task"
    shutil.copytree(get_task("triton-rmsnorm").root, root)
    raw = yaml.safe_load((root / "task.yaml").read_text())
    if declared:
        raw["allowed_torch_ops"] = ["arange"]
    (root / "task.yaml").write_text(yaml.safe_dump(raw))
    task = load_task(root)
    ws = tmp_path / "ws"
    ws.mkdir()
    for rel in task.public_files():
        shutil.copy(task.root / rel, ws / rel)
    (ws / "kernel.py").write_text(ARANGE)
    g = Grader(task, detect_profile("cpu-interpreter"), tmp_path / "grading",
               GraderConfig(static_check=False)).grade(ws, seed=5)
    if declared:
        assert g.score == 120.0 and g.checks["dynamic_check"] == "passed", g.summary()
    else:
        assert g.score == 20.0 and g.checks["dynamic_check"] == "failed", g.summary()
        assert "`aten.arange.default`" in "\n".join(g.stages[1].messages)


def test_a_request_of_another_protocol_version_is_refused():
    from kernelgym.grader.protocol import PROTOCOL_VERSION
    task = get_task("triton-rmsnorm")
    grader = Grader(task, detect_profile("cpu-interpreter"), "/nonexistent", GraderConfig())
    req = grader._request(grader.work_dir / "g", 1, timed=False).to_json()
    assert req["protocol_version"] == PROTOCOL_VERSION
    for version in (None, PROTOCOL_VERSION + 1):
        with pytest.raises(ProtocolError, match="protocol_version"):
            Request.from_json({**req, "protocol_version": version})
