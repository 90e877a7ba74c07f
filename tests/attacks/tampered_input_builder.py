"""Attack: the grading directory's reference.py (which the candidate's process can write) builds degenerate inputs,
here all zeros, on which a wrong or trivial kernel agrees with the reference.

Defence: `input_builder_from_pristine_copy` (the harness imports the input builder from the read-only pristine
baseline copy, before any candidate code runs, never from the grading directory).
Honest twin: the baseline, graded with the tampered file beside it, scores 120 on the real inputs.
"""
from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile

TASK = get_task("triton-rmsnorm")


def test_input_builder_is_loaded_from_the_pristine_copy(tmp_path, require_bwrap, monkeypatch, make_workspace):
    # A grading directory whose reference.py makes other inputs: the harness must not use it.
    import kernelgym.grader.preparing as grader_module
    real = grader_module.copy_public

    def tampered(task, dest):
        real(task, dest)
        if dest.name.startswith("grade-"):
            (dest / "reference.py").write_text((TASK.root / "reference.py").read_text().replace(
                "x = torch.randn(", "x = 0 * torch.randn("))
    monkeypatch.setattr(grader_module, "copy_public", tampered)
    ws = make_workspace()
    g = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(warm_worker=False)).grade(ws, 2)
    assert g.score == 120.0, g.summary()
