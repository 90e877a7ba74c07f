"""benchmarks/host_cost.py (the host's CPU share of moving a grading's data): its plumbing on a small task: the input
set comes back whole (every byte of the seen configs' inputs), the outputs file is loaded, and the result says that
nothing was timed on a GPU."""
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_input_set_and_the_outputs_load_are_measured_and_labelled(tmp_path):
    import torch

    from kernelgym.discovery import get_task
    from kernelgym.grader.reference import load_reference
    out = tmp_path / "host_cost.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "host_cost.py"), "--task", "triton-rmsnorm",
                           "--repeat", "1", "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text())
    task = get_task("triton-rmsnorm")
    builder = load_reference(task)[1]
    want = sum(math.prod(a.shape) * a.element_size() for i, cfg in enumerate(task.spec.seen_configs)
               for a in builder(cfg, i) if isinstance(a, torch.Tensor))
    assert result["input_set"]["bytes"] == want
    assert result["outputs_load"]["bytes"] > 0 and result["input_set"]["builder_cpu_s"] > 0
    assert "no GPU" in result["note"] and result["tree"] == str(ROOT)
