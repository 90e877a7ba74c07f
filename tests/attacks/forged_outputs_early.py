"""Attack: the candidate returns zeros (wrong), but at import writes outputs.pt itself with the right answers,
computed from the grading's seed and configs (once read from request.json, which the harness now deletes once
prepared: the test gives them to the payload) and the pristine reference.py in its grading directory. The parent's early
comparison (made while the candidate's process still runs) read and remembered that first file; the harness's
own outputs.pt (the zeros), written later, was never read. Found by an adversarial review (2026-11-29).

Defence: `outputs_reread_when_replaced` (the final comparison, made when no candidate code runs any more, checks
each file's identity and compares again whatever was replaced or rewritten since it was read early; a config not
yet compared early is read from the file as it is at the end, not from the early copy).
The grading test turns the static provenance check off: it refuses this kernel first, for reading reference.py
(`static_provenance_check`), while the attack needs no reference (the answers could come from anywhere).
Honest twin: an honest kernel's outputs, compared early, are not read twice (tests/test_performance.py,
test_outputs_are_compared_while_the_candidate_still_runs).

`FORGED_OUTPUTS_EARLY` is the attack kernel; it is a string so that collecting this file never runs it.
"""
import json
import os
import time

import torch

from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig
from kernelgym.grader.protocol import check_seed, output_key
from kernelgym.grader.reference import reference_outputs
from kernelgym.grader.session import GradingSession

TASK = get_task("triton-rmsnorm")

FORGED_OUTPUTS_EARLY = r'''
import json, os, torch, triton, triton.language as tl, importlib.util, time
_d = os.path.dirname(os.path.abspath(__file__))

@triton.jit
def rmsnorm_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32).to(y_ptr.dtype.element_ty), mask=offs < n)

def _forge():
    req = json.loads(REQUEST)  # what request.json held: the harness deletes it once prepared (the seed, the configs)
    spec = importlib.util.spec_from_file_location("ref_", os.path.join(_d, "reference.py"))
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    name = req["outputs"][0]["name"]
    outs = {}
    for i, cfg in enumerate(req["configs"]):
        x, w, eps = m.make_inputs(cfg, req["seed"] + i, "cpu")
        outs[f"{i}/{name}"] = m.rmsnorm_reference(x, w, eps).to(x.dtype)
    path = os.path.join(_d, "outputs.pt")
    torch.save(outs, path + ".x")
    os.replace(path + ".x", path)
    time.sleep(0.3)  # let the parent's early-compare thread (5 ms poll) read and memoize it
_forge()

def rmsnorm(x, weight, eps=1e-6):
    y = torch.empty_like(x)
    rmsnorm_kernel[(triton.cdiv(y.numel(), 1024),)](y, y.numel(), BLOCK=1024)  # satisfies the launch counter
    return y  # all zeros: wrong
'''


def test_outputs_written_by_the_candidate_before_the_harness_are_not_graded(grade, tmp_path):
    # Returns zeros, but at import saves the right answers as outputs.pt, which the parent's early comparison used
    # to read and keep; the harness's own outputs.pt came later.
    from kernelgym.grader import Grader
    from kernelgym.hardware import detect_profile
    configs = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "configs").configs
    request = {"seed": 7, "configs": configs, "outputs": [{"name": o.name} for o in TASK.spec.outputs]}
    kernel = FORGED_OUTPUTS_EARLY.replace("json.loads(REQUEST)", f"json.loads({json.dumps(request)!r})")
    g = grade(kernel, config=GraderConfig(static_check=False))
    assert g.compiled and not g.correct and g.score == 20, g.summary()


def _save_whole(obj, path):
    torch.save(obj, f"{path}.part")
    os.replace(f"{path}.part", path)


def test_configs_not_yet_compared_early_are_read_from_the_file_as_it_is_at_the_end(tmp_path):
    # The early comparison loaded outputs.pt (a candidate's own, right answers) and compared config 0 before the
    # candidate's process ended; the harness then replaced the file (zeros). Config 1, compared only at the end,
    # must be read from the new file, not from what was loaded early.
    configs = [{"rows": 4, "hidden": 128, "dtype": "float16"}, {"rows": 8, "hidden": 256, "dtype": "bfloat16"}]
    gdir = tmp_path / "grade"
    gdir.mkdir()
    session = GradingSession.start(TASK, gdir, 3, configs, timed=False, gpu=False, seen=False)
    name = TASK.spec.outputs[0].name
    path = gdir / "outputs.pt"
    right = {}
    for i, cfg in enumerate(configs):
        (ref,) = reference_outputs(TASK, cfg, check_seed(3, i))
        right[output_key(i, name)] = ref.to(getattr(torch, cfg["dtype"]))
    _save_whole(right, path)
    assert session.compared(path, 0, check_seed(3, 0), final=False)[0]
    time.sleep(0.01)  # a new ctime
    _save_whole({k: torch.zeros_like(v) for k, v in right.items()}, path)
    assert not session.compared(path, 1, check_seed(3, 1))[0]  # never compared early: read from the file as it is now
    assert not session.compared(path, 0, check_seed(3, 0))[0]  # compared early: compared again
