"""README.md's task table is `kernelgym list --format markdown`: a task folder added without updating the README
fails here."""
import re
from pathlib import Path

from kernelgym.cli import main

README = Path(__file__).resolve().parent.parent / "README.md"
MARKERS = re.compile(r"<!-- tasks:begin -->\n(.*?)\n<!-- tasks:end -->", re.S)


def test_readme_task_table_is_the_list_command_output(capsys, monkeypatch):
    for variable in ("KERNELGYM_TASKS_PATH", "KERNELGYM_HARDWARE_PATH"):  # built-in tasks and profiles only
        monkeypatch.delenv(variable, raising=False)
    assert main(["list", "--format", "markdown"]) == 0
    generated = capsys.readouterr().out.strip()
    found = MARKERS.search(README.read_text())
    assert found, "README.md: no task table between <!-- tasks:begin --> and <!-- tasks:end -->"
    assert found.group(1).strip() == generated, (
        "README.md's task table differs from `kernelgym list --format markdown`; paste that command's output "
        f"between the tasks markers. Expected:\n{generated}")


def test_markdown_table_escapes_pipes_and_marks_missing_difficulty():
    from types import SimpleNamespace

    from kernelgym.cli import tasks_markdown

    spec = SimpleNamespace(kind="triton2triton", language="triton", difficulty=None)
    task = SimpleNamespace(env_id="KernelArena/a|b-v0", spec=spec, unsupported_reason=lambda profile: None)
    profile = SimpleNamespace(id="cpu-interpreter", supports=lambda language: language == "triton")
    rows = tasks_markdown({"a": task}, {"cpu-interpreter": profile}).splitlines()
    assert rows[0] == "| env id | kind | language | difficulty | hardware |"
    assert rows[2] == r"| `KernelArena/a\|b-v0` | triton2triton | triton | - | cpu-interpreter |"


def test_the_task_yaml_example_in_docs_tasks_validates():
    import yaml

    from kernelgym.task import TaskSpec

    docs = (README.parent / "docs" / "TASKS.md").read_text()
    found = re.search(r"<!-- example:task.yaml -->\n```yaml\n(.*?)```", docs, re.S)
    assert found, "docs/TASKS.md: no ```yaml block after <!-- example:task.yaml -->"
    spec = TaskSpec.model_validate(yaml.safe_load(found.group(1)))
    assert [o.rule_for(spec.seen_configs[0]) for o in spec.outputs] == ["tolerance", "set", "exact"]


def test_markdown_list_keeps_broken_tasks_out_of_the_table(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KERNELGYM_TASKS_PATH", raising=False)
    broken = tmp_path / "triton" / "broken"
    broken.mkdir(parents=True)
    (broken / "task.yaml").write_text("id: broken\nlanguage: triton\nkind: [unclosed\n")
    assert main(["list", "--format", "markdown", "--tasks-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert all(line.startswith("|") for line in out.strip().splitlines())
    assert "broken task, not registered" in err and "not valid YAML" in err
