"""`kernelgym validate` grades a torch2* task's baseline (the PyTorch module: the time to beat, which a submission may
not be) without the static check and the observer, and every other task's with them."""
from kernelgym import validate
from kernelgym.discovery import get_task
from kernelgym.hardware import all_profiles


def test_validate_grades_a_torch2_baseline_without_the_provenance_checks(tmp_path, monkeypatch):
    seen = {}

    class Recorder:
        def __init__(self, task, hardware, work_dir, config):
            seen[task.name] = config

        def grade(self, root, seed):
            from types import SimpleNamespace
            return SimpleNamespace(correct=True, summary=lambda: "ok")

    import kernelgym.grader as grader_package
    monkeypatch.setattr(grader_package, "Grader", Recorder)
    hw = all_profiles()["h200"]
    for name in ("cuda-attention", "cuda-gelu"):
        assert validate._grade_baseline(get_task(name), hw, tmp_path / name, "none") == (True, "ok")
    assert get_task("cuda-attention").spec.kind == "torch2cuda" and get_task("cuda-gelu").spec.kind == "cuda2cuda"
    assert not seen["cuda-attention"].static_check and seen["cuda-attention"].observer == "off"
    assert not seen["cuda-attention"].dynamic_check
    assert seen["cuda-gelu"].static_check and seen["cuda-gelu"].observer == "auto" and seen["cuda-gelu"].dynamic_check
