"""`kernelgym.list_tasks`: task records filtered by language, kind, hardware and difficulty; bad values named."""
import dataclasses
import re
import shutil

import gymnasium as gym
import pytest
import yaml

import kernelgym
from kernelgym import TaskInfo, list_tasks
from kernelgym.catalog import DIFFICULTIES, KINDS
from kernelgym.task import DEFAULT_TASKS_ROOT


def test_every_task_listed_with_its_task_yaml_fields():
    tasks = list_tasks()
    assert tasks == sorted(tasks, key=lambda t: t.env_id)
    by_name = {t.name: t for t in tasks}
    assert len(by_name) == len(kernelgym.discover_tasks()) and len(tasks) >= 32
    rms = by_name["triton-rmsnorm"]
    spec = yaml.safe_load((DEFAULT_TASKS_ROOT / "triton" / "rmsnorm" / "task.yaml").read_text())
    assert (rms.env_id, rms.language, rms.kind, rms.difficulty) == (
        "KernelArena/triton-rmsnorm-v0", "triton", spec["kind"], spec["difficulty"])
    assert (rms.seen_configs, rms.interpreter_configs) == (len(spec["seen_configs"]), len(spec["interpreter_configs"]))
    assert rms.root == DEFAULT_TASKS_ROOT / "triton" / "rmsnorm"
    assert "cpu-interpreter" in rms.hardware and "h200" in rms.hardware
    assert "cpu-interpreter" not in by_name["cuda-gelu"].hardware  # a CUDA task needs an NVIDIA GPU
    # unsupported_hardware in task.yaml takes a profile out: the interpreter rounds fp8 wrongly
    assert "cpu-interpreter" not in by_name["triton-per-token-quant-fp8"].hardware
    with pytest.raises(dataclasses.FrozenInstanceError):
        rms.kind = "cuda2cuda"
    assert all(t.env_id in gym.registry for t in tasks)


def test_filters_combine():
    easy_cpu = list_tasks(language="triton", hardware="cpu-interpreter", difficulty="easy")
    assert easy_cpu and all(t.language == "triton" and t.difficulty == "easy" and "cpu-interpreter" in t.hardware
                            for t in easy_cpu)
    names = {t.name for t in easy_cpu}
    assert "triton-rmsnorm" in names and "triton-per-token-quant-fp8" not in names and "triton-matmul" not in names
    assert {t.name for t in list_tasks(kind="torch2cuda")} == {"cuda-attention", "cuda-cross-entropy", "cuda-rmsnorm",
                                                              "cuda-swiglu-mlp"}
    assert list_tasks(kind="hip2hip") == []  # a valid kind no built-in task has
    both = list_tasks(difficulty=["easy", "hard"])
    assert {t.difficulty for t in both} == {"easy", "hard"}
    assert len(both) == len(list_tasks(difficulty="easy")) + len(list_tasks(difficulty="hard"))


@pytest.mark.parametrize("argument, value, valid", [
    ("language", "trition", "cuda, triton"),
    ("kind", "triton2cuda", ", ".join(sorted(KINDS))),
    ("hardware", "h300", "cpu-interpreter, h100, h200, mi300x, mi355x"),
    ("difficulty", "trivial", ", ".join(sorted(DIFFICULTIES))),
])
def test_bad_filter_names_the_valid_values(argument, value, valid):
    with pytest.raises(ValueError, match=re.escape(f"unknown {argument} {value!r}")) as e:
        list_tasks(**{argument: value})
    assert str(e.value).endswith(f"valid values: {valid}")


def test_close_match_suggested():
    with pytest.raises(ValueError, match=re.escape("(did you mean 'triton'?)")):
        list_tasks(language="trition")


def test_user_task_listed_with_tasks_dir(tmp_path):
    folder = tmp_path / "mine" / "triton" / "rmsnorm-hard"
    shutil.copytree(DEFAULT_TASKS_ROOT / "triton" / "rmsnorm", folder, ignore=shutil.ignore_patterns("__pycache__"))
    yml = folder / "task.yaml"
    yml.write_text(re.sub(r"(?m)^difficulty: easy$", "difficulty: hard",
                          re.sub(r"(?m)^id: rmsnorm$", "id: rmsnorm-hard", yml.read_text())))
    (mine,) = [t for t in list_tasks(difficulty="hard", tasks_dir=tmp_path / "mine") if t.root == folder]
    assert isinstance(mine, TaskInfo) and mine.env_id == "KernelArena/triton-rmsnorm-hard-v0"
    assert "triton-rmsnorm-hard" not in {t.name for t in list_tasks()}  # not on the default search path


def test_task_dataset_rows_are_the_reset_prompts(tmp_path, require_bwrap):
    from kernelgym.catalog import WORKSPACE_PLACEHOLDER

    ds = kernelgym.task_dataset(language="triton", difficulty="easy", hardware="cpu-interpreter", seeds=[3, 7],
                                system="Be brief.", max_steps=7)
    names = [t.name for t in list_tasks(language="triton", difficulty="easy", hardware="cpu-interpreter")]
    assert ds.num_rows == 2 * len(names) and sorted(set(ds["task"])) == sorted(names)
    assert {"prompt", "task", "env_id", "seed", "language", "kind", "difficulty"} <= set(ds.column_names)
    rms = [r for r in ds if r["task"] == "triton-rmsnorm"]
    assert [r["seed"] for r in rms] == [3, 7]
    row = rms[0]
    assert (row["env_id"], row["language"], row["kind"], row["difficulty"], row["max_steps"]) == (
        "KernelArena/triton-rmsnorm-v0", "triton", "triton2triton", "easy", 7)
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    env = gym.make(row["env_id"], run_dir=tmp_path, max_steps=row["max_steps"])
    try:
        obs, _ = env.reset(seed=row["seed"])
        workspace = str(env.unwrapped.workspace)
    finally:
        env.close()
    # The env's own prompt, the episode's workspace path aside.
    assert row["prompt"][1]["content"] == obs["prompt"].replace(workspace, WORKSPACE_PLACEHOLDER)
    assert "You have 7 steps" in row["prompt"][1]["content"]


def test_task_dataset_styles_and_errors(monkeypatch):
    short = kernelgym.task_dataset(kind="torch2cuda", hardware="h200", prompt="short")
    assert sorted(short["task"]) == ["cuda-attention", "cuda-cross-entropy", "cuda-rmsnorm", "cuda-swiglu-mlp"]
    assert short[0]["prompt"] == [{"role": "user", "content": kernelgym.catalog.SHORT_INSTRUCTION}]
    # a CUDA task is no row on the interpreter: every row can be made where the prompts say
    assert "cuda-gelu" not in kernelgym.task_dataset(hardware="cpu-interpreter", prompt="short")["task"]
    assert kernelgym.task_dataset(kind="hip2hip").num_rows == 0
    with pytest.raises(ValueError, match="unknown style 'chat'"):
        kernelgym.task_dataset(prompt="chat")
    with pytest.raises(ValueError, match="one profile id"):
        kernelgym.task_dataset(hardware=["h200", "h100"])
    with pytest.raises(ValueError, match="unknown difficulty 'trivial'"):
        kernelgym.task_dataset(difficulty="trivial")
    monkeypatch.setitem(__import__("sys").modules, "datasets", None)  # as if not installed
    with pytest.raises(ImportError, match=re.escape("kernelgym[data]")):
        kernelgym.task_dataset()
