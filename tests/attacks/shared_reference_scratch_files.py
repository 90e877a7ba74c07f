"""Attack: (robustness) two gradings of one grader whose references overlap in time share
`run_reference_process`'s scratch files, whose names are fixed (``reference-jobs.json``, ``reference-outputs.pt``
in the grader's work_dir, `References(work_dir=gdir.parent)`). This happens on a GPU for every task with
``reference_device: cuda`` (attention, swiglu-mlp, paged-attention-decode, flash-attention) where a session's
references are still being computed when the next session starts: the prepared session given up in `_session_for`
(its worker died), or unseen evaluation (`_grade_each`), where a candidate that fails to import on one config
returns before its references were waited for, and the next config's session starts at once. One grading then
computes, or loads, the other's jobs: a correct kernel compared with another config's (or seed's) reference, or a
torch.load of a half-written file raising TaskSpecError out of grade() and env.step.

Defence: `private_reference_scratch_dir`: each call writes its scratch files in a temporary directory of its own, removed once read (or on failure).
Shown here with the reference on the CPU (the device does not matter to the file names).
"""
import subprocess
import threading

import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import reference
from kernelgym.grader.reference import run_reference_process

TASK = get_task("triton-rmsnorm")


@pytest.mark.timeout(120)
def test_overlapping_reference_processes_each_get_their_own_jobs(tmp_path, monkeypatch):
    a = [({"rows": 4, "hidden": 128, "dtype": "float16"}, 1)]
    b = [({"rows": 8, "hidden": 256, "dtype": "float16"}, 2)]
    got, errors = {}, []
    # Both calls have written their jobs before either process starts: the overlap, without timing luck.
    both_written, real_run = threading.Barrier(2, timeout=60), subprocess.run

    def run_when_both_written(*args, **kwargs):
        both_written.wait()
        return real_run(*args, **kwargs)
    monkeypatch.setattr(reference.subprocess, "run", run_when_both_written)

    def run(name, jobs):
        try:
            got[name] = run_reference_process(TASK, jobs, tmp_path, device="cpu")
        except Exception as e:  # noqa: BLE001
            errors.append(f"{name}: {type(e).__name__}: {str(e)[:300]}")

    threads = [threading.Thread(target=run, args=(name, jobs)) for name, jobs in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert tuple(got["a"][0][0].shape) == (4, 128), f"session a got {tuple(got['a'][0][0].shape)}"
    assert tuple(got["b"][0][0].shape) == (8, 256), f"session b got {tuple(got['b'][0][0].shape)}"
    assert list(tmp_path.iterdir()) == []  # each call's scratch files are removed once read
