"""Attack: code the candidate runs at import slows the baseline down, to inflate its own speedup: it replaces the
baseline module's kernel function (the harness imports the pristine baseline in the same process, to time both)
with a slow one.

Defence: `baseline_prepared_before_import` (the harness loads the baseline from the pristine copy and prepares its
timing, the CUDA graphs captured around its function, in `prepare`, before the candidate is imported; the timed
runs replay those graphs, so a later patch of the module reaches nothing that is timed). Here, on the CPU, the
harness serves a real request with `prepare_baseline` recording what it was given and when.
Honest twin: the candidate behind the patch computes the right output; its check passes.
"""
import json
import shutil
import sys

from kernelgym.discovery import get_task
from kernelgym.grader import harness
from kernelgym.grader.protocol import OutputSlot, Request

TASK = get_task("triton-rmsnorm")

PATCH_THE_BASELINE = '''
import os, sys, time
_d = os.path.dirname(os.path.abspath(__file__))
open(os.path.join(_d, "candidate-imported"), "w").close()
_base = sys.modules.get("kernelgym_baseline")
if _base is not None:
    _fast = _base.rmsnorm
    _base.rmsnorm = lambda *a, **k: (time.sleep(0.01), _fast(*a, **k))[1]  # slow the baseline down


def rmsnorm(x, weight, eps=1e-6):
    xf = x.float()
    return (xf * (xf.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * weight.float()).to(x.dtype)
'''


def test_the_baseline_is_prepared_before_the_candidate_is_imported(tmp_path, monkeypatch):
    gdir, base_dir = tmp_path / "grade", tmp_path / "baseline"
    for d in (gdir, base_dir):
        d.mkdir()
        for rel in TASK.public_files():
            shutil.copy(TASK.root / rel, d / rel)
    (gdir / "kernel.py").write_text(PATCH_THE_BASELINE)
    cfg = TASK.spec.interpreter_configs[0]
    req = Request(mode="grade", language="triton", directory=str(gdir), entry_point=TASK.spec.entry_point,
                  input_builder=TASK.spec.input_builder, builder_directory=str(base_dir), configs=[cfg], seed=1,
                  device="cpu", outputs=[OutputSlot(TASK.spec.outputs[0].name)],
                  baseline_directory=str(base_dir), require_own_launch=False)
    (gdir / "request.json").write_text(json.dumps(req.to_json()))
    prepared = []

    def prepare_baseline(req, state, base_fn):  # what the harness times the baseline with, and when it got it
        prepared.append((base_fn, (gdir / "candidate-imported").exists()))
    monkeypatch.setattr(harness, "prepare_baseline", prepare_baseline)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the harness puts the grading directory on it
    modules = set(sys.modules)
    try:
        harness.main(str(gdir / "request.json"))  # in this process: the modules it imports are removed below
        baseline_module = sys.modules["kernelgym_baseline"]
    finally:
        for name in set(sys.modules) - modules:
            del sys.modules[name]
    (base_fn, candidate_seen), = prepared
    assert not candidate_seen  # prepared before the candidate's code ran
    assert base_fn.__code__.co_filename == str(base_dir / "kernel.py")  # the pristine function itself
    assert baseline_module.rmsnorm is not base_fn  # the candidate's patch came later, and reached no timed call
    assert json.loads((gdir / "check_result.json").read_text())["configs"][0]["ok"]
