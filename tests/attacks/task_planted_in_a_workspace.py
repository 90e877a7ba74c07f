"""Attack: plant a task folder (or a graded episode) in the workspace, where a task search path that covers the run
directory (`tasks_dir="."` beside the default ./kernelgym-runs) would find it. A planted reference task would replace
the real one for every later episode (its scripts exit 0: any kernel 120); a planted native task would block it; a
planted episodes/<id>/grade.json would be replayed by `kernelgym unseen`. Defence `episodes_never_searched`:
discovery skips every folder holding an episode record (discovery.EPISODE_RECORD), a second reference folder of a
name is refused, and the replay reads only the run's own episodes. The honest twin: the real task folder beside the
run directory is still found."""
import json
import shutil
from pathlib import Path

from kernelgym.discovery import EPISODE_RECORD
from kernelgym.reference_tasks.spec import discover_reference_tasks
from kernelgym.discovery import discover_tasks_report

DATA = Path(__file__).resolve().parent.parent / "data"


def test_a_task_planted_in_an_episode_workspace_is_not_discovered(tmp_path):
    real = tmp_path / "mytasks" / "vllm_silu_and_mul"
    shutil.copytree(DATA / "reference_tasks" / "vllm_silu_and_mul", real)
    episode = tmp_path / "kernelgym-runs" / "episodes" / "20261203-000000-abcd1234"
    workspace = episode / "workspace"
    shutil.copytree(real, workspace / "x" / "vllm_silu_and_mul")  # sorts before mytasks/
    shutil.copytree(DATA / "toy_tasks" / "toy" / "scale", workspace / "y" / "scale")
    (episode / EPISODE_RECORD).write_text(json.dumps({"task": "t"}))
    tasks, problems = discover_reference_tasks([tmp_path])
    assert [t.root for t in tasks.values()] == [real.resolve()] and problems == []
    report = discover_tasks_report([tmp_path])
    assert not any("workspace" in str(t.root) for t in report.tasks.values())
    assert not any("workspace" in str(p.path) for p in report.problems)


def test_two_reference_folders_of_one_name_are_refused(tmp_path):
    from kernelgym.reference_tasks.spec import find_reference_task
    import pytest
    from kernelgym.errors import TaskSpecError
    for parent in ("a", "b"):
        shutil.copytree(DATA / "reference_tasks" / "vllm_silu_and_mul", tmp_path / parent / "vllm_silu_and_mul")
    name = next(iter(discover_reference_tasks([tmp_path])[0]))
    with pytest.raises(TaskSpecError, match="already taken"):
        find_reference_task(name, tasks_dir=tmp_path)


def test_an_episode_planted_in_a_workspace_is_not_replayed(tmp_path):
    from kernelgym.unseen.replay import replay_run
    import pytest
    planted = tmp_path / "episodes" / "real" / "workspace" / "episodes" / "fake"
    planted.mkdir(parents=True)
    (planted / "grade.json").write_text("{}")
    (planted / EPISODE_RECORD).write_text(json.dumps({"task_dir": "/nowhere", "task": "x"}))
    with pytest.raises(FileNotFoundError, match="no graded episodes"):
        replay_run(tmp_path)
