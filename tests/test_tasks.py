"""Task loading: every task under tasks/ validates; malformed task.yaml files give errors naming file and field."""
import re
import shutil
from pathlib import Path

import pytest
import yaml

from kernelgym.errors import TaskSpecError, UnknownTaskError
from kernelgym.discovery import discover_tasks, get_task
from kernelgym.task import load_task

TASK_DIR = get_task("triton-rmsnorm").root


@pytest.fixture
def task_copy(tmp_path):
    dest = tmp_path / "rmsnorm"
    shutil.copytree(TASK_DIR, dest)
    return dest


def edit(task_dir, **changes):
    raw = yaml.safe_load((task_dir / "task.yaml").read_text())
    for k, v in changes.items():
        if v is None:
            raw.pop(k)
        else:
            raw[k] = v
    (task_dir / "task.yaml").write_text(yaml.safe_dump(raw))


def test_all_tasks_load():
    tasks = discover_tasks()
    assert "triton-rmsnorm" in tasks
    t = tasks["triton-rmsnorm"]
    assert t.env_id == "KernelArena/triton-rmsnorm-v0" and t.spec.kind == "triton2triton"
    assert len(t.spec.seen_configs) == 5 and t.spec.seen_configs[-1] == {"rows": 4096, "hidden": 8192, "dtype": "float16"}
    assert [str(p) for p in t.public_files()] == ["kernel.py", "reference.py"]


def test_missing_field_names_field_and_file(task_copy):
    edit(task_copy, entry_point=None)
    with pytest.raises(TaskSpecError, match=re.escape(f"{task_copy / 'task.yaml'}: field `entry_point`: Field required")):
        load_task(task_copy)


def test_wrong_type_names_nested_field(task_copy):
    edit(task_copy, tolerance={"float16": {"atol": "loose", "rtol": 0.1}, "bfloat16": {"atol": 0.1, "rtol": 0.1}})
    with pytest.raises(TaskSpecError, match=r"field `tolerance.float16.atol`"):
        load_task(task_copy)


def test_unknown_field_rejected(task_copy):
    edit(task_copy, tolerence={})
    with pytest.raises(TaskSpecError, match=r"field `tolerence`: Extra inputs are not permitted"):
        load_task(task_copy)


def test_missing_file_named(task_copy):
    (task_copy / "reference.py").unlink()
    with pytest.raises(TaskSpecError, match=r"field `reference`: file 'reference.py' not found"):
        load_task(task_copy)


def test_config_dtype_without_tolerance(task_copy):
    edit(task_copy, tolerance={"float16": {"atol": 0.01, "rtol": 0.01}})
    with pytest.raises(TaskSpecError, match=r"no entry in tolerance"):
        load_task(task_copy)


def test_bad_yaml_and_missing_file(task_copy, tmp_path):
    (task_copy / "task.yaml").write_text("id: [unclosed")
    with pytest.raises(TaskSpecError, match="not valid YAML"):
        load_task(task_copy)
    with pytest.raises(TaskSpecError, match="task.yaml: not found"):
        load_task(tmp_path / "nowhere")


def test_unknown_task_suggests():
    with pytest.raises(UnknownTaskError, match="Did you mean 'triton-rmsnorm'"):
        get_task("triton-rmsnrom")


def test_get_task_by_env_id_and_path():
    assert get_task("KernelArena/triton-rmsnorm-v0").name == "triton-rmsnorm"
    assert get_task(str(TASK_DIR)).name == "triton-rmsnorm"


@pytest.mark.parametrize("name", sorted(discover_tasks()))
def test_every_task_refuses_trivial_outputs_and_runs_its_reference_on_every_seen_config(name):
    # Every task folder is checked for free: its reference runs on each config it is graded on (tiny ones here, the
    # seen ones on a GPU), in the declared number of outputs, and neither zeros nor a constant pass any of them.
    from kernelgym.grader.reference import prepare_outputs, reference_outputs, trivial_passes
    task = get_task(name)
    for cfg in task.configs_for(True) + task.configs_for(False)[:1]:
        refs = reference_outputs(task, cfg, seed=0)
        assert len(refs) == len(task.spec.outputs)
        assert trivial_passes(task, cfg, prepare_outputs(task, cfg, refs)) == []


#: Factories that make a tensor on the CPU unless given `device=`.
_FACTORIES = {"arange", "full", "zeros", "ones", "empty", "tensor", "eye", "linspace", "randn", "rand", "randint"}


@pytest.mark.parametrize("name", sorted(discover_tasks()))
def test_reference_functions_make_no_tensor_on_the_cpu_only(name):
    """On a GPU, `kernelgym validate` and the task suite run each reference on its inputs on the GPU: a tensor a
    reference makes without `device=` lands on the CPU and the op mixing the two raises (found on the H200:
    argmax-sampling's `torch.arange`). The input builder may: it draws on the CPU and moves what it returns."""
    import ast
    task = get_task(name)
    file, func = task.spec.reference.split(":")
    tree = ast.parse((task.root / file).read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func)
    bad = [f"line {n.lineno}: torch.{n.func.attr}(...)" for n in ast.walk(fn)
           if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _FACTORIES
           and isinstance(n.func.value, ast.Name) and n.func.value.id == "torch"
           and not any(k.arg == "device" for k in n.keywords)]
    assert not bad, f"{name}: {file}:{func} makes tensors without device=: {bad}"


def test_a_reference_format_folder_given_as_a_task_is_loaded_in_its_format():
    """Found by a new user: KernelArenaEnv(<a config.yaml folder>) said only 'Unknown task'. The native loader names
    the reference loader; the env's resolver loads the folder in its own format."""
    from kernelgym.reference_tasks import ReferenceTask
    from kernelgym.task_format import format_of, resolve_task
    folder = Path(__file__).parent / "data" / "reference_tasks" / "rocmbench_add_kernel"
    with pytest.raises(UnknownTaskError, match="load_reference_task"):
        get_task(str(folder))
    task = resolve_task(str(folder))
    assert isinstance(task, ReferenceTask) and task.root == folder.resolve() and format_of(task).name == "reference"
    assert format_of(resolve_task("triton-rmsnorm")).name == "native"
    with pytest.raises(UnknownTaskError, match="Did you mean 'triton-rmsnorm'"):
        resolve_task("triton-rmsnrom")
    with pytest.raises(TypeError, match="got int"):
        resolve_task(3)


def test_an_editable_file_spelled_with_dot_slash_is_copied_once(task_copy, tmp_path):
    """Found by review (the reference format had it too): `./kernel.py` in editable_files named the file twice, once
    as spelled and once as the folder walk names it, and grading failed writing it a second time."""
    from kernelgym.grader.files import copy_candidate
    text = (task_copy / "task.yaml").read_text()
    (task_copy / "task.yaml").write_text(text.replace("editable_files: [kernel.py]", "editable_files: [./kernel.py]", 1)
                                         .replace("entry_point: kernel.py:", "entry_point: ./kernel.py:", 1))
    task = load_task(task_copy)
    assert task.spec.editable_files == ["kernel.py"] and task.spec.entry_point == "kernel.py:rmsnorm"
    dest = tmp_path / "grading"
    dest.mkdir()
    assert copy_candidate(task, task_copy, dest) == [] and (dest / "kernel.py").is_file()


def test_allowed_torch_ops_are_operator_names(task_copy):
    assert load_task(TASK_DIR).spec.allowed_torch_ops == []
    edit(task_copy, allowed_torch_ops=["arange", "index_select"])
    assert load_task(task_copy).spec.allowed_torch_ops == ["arange", "index_select"]
    for bad in ("aten.arange.default", "Arange", "arange; rm"):
        edit(task_copy, allowed_torch_ops=[bad])
        with pytest.raises(TaskSpecError, match=r"field `allowed_torch_ops`: .*is not an aten operator name"):
            load_task(task_copy)
