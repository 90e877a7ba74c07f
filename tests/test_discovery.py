"""Task search path: built-in root, $KERNELGYM_TASKS_PATH and tasks_dir; broken task folders never break the rest."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

from kernelgym.discovery import (TASKS_PATH_ENV, DiscoveryWarning, discover_tasks, discover_tasks_report, get_task,
                                 parse_task_name, task_search_path)
from kernelgym.env import KernelArenaEnv
from kernelgym.errors import TaskSpecError, UnknownTaskError
from kernelgym.registration import register_tasks
from kernelgym.task import DEFAULT_TASKS_ROOT

BUILTIN = DEFAULT_TASKS_ROOT / "triton" / "rmsnorm"


def copy_task(dest: Path, task_id: str | None) -> Path:
    """A copy of the built-in rmsnorm task at `dest`, its `id` changed to `task_id` (None: kept)."""
    shutil.copytree(BUILTIN, dest, ignore=shutil.ignore_patterns("__pycache__"))
    if task_id is not None:
        yml = dest / "task.yaml"
        yml.write_text(re.sub(r"(?m)^id: rmsnorm$", f"id: {task_id}", yml.read_text()))
    return dest


@pytest.fixture
def user_tasks(tmp_path) -> Path:
    """A user's task folder: one good task (triton-rmsnorm-user) and one whose task.yaml lacks `entry_point`."""
    root = tmp_path / "my-tasks"
    copy_task(root / "triton" / "rmsnorm-user", "rmsnorm-user")
    broken = copy_task(root / "triton" / "broken", "broken")
    yml = broken / "task.yaml"
    yml.write_text(re.sub(r"(?m)^entry_point:.*\n", "", yml.read_text()))
    return root


def test_search_path_order(monkeypatch, tmp_path):
    monkeypatch.setenv(TASKS_PATH_ENV, os.pathsep.join([str(tmp_path / "a"), "", str(tmp_path / "b")]))
    assert task_search_path(tmp_path / "c") == [DEFAULT_TASKS_ROOT, tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    assert task_search_path([tmp_path / "c", str(tmp_path / "d")])[-2:] == [tmp_path / "c", tmp_path / "d"]


def test_report_keeps_good_tasks_and_collects_broken(user_tasks):
    tasks, problems = discover_tasks_report([DEFAULT_TASKS_ROOT, user_tasks])
    assert {"triton-rmsnorm", "triton-rmsnorm-user"} <= set(tasks)
    (problem,) = problems
    assert problem.path == user_tasks / "triton" / "broken" / "task.yaml" and problem.kind == "broken"
    assert problem.name == "triton-broken"
    assert "field `entry_point`: Field required" in problem.message
    assert set(discover_tasks([DEFAULT_TASKS_ROOT, user_tasks])) == set(tasks)


def test_get_task_with_tasks_dir(user_tasks):
    task = get_task("triton-rmsnorm-user", tasks_dir=user_tasks)
    assert task.root == user_tasks / "triton" / "rmsnorm-user" and task.env_id == "KernelArena/triton-rmsnorm-user-v0"
    assert get_task("KernelArena/triton-rmsnorm-user-v0", tasks_dir=[user_tasks]).root == task.root
    with pytest.raises(UnknownTaskError, match=r"Unknown task 'triton-rmsnorm-user'\. Did you mean .*'triton-rmsnorm'"):
        get_task("triton-rmsnorm-user")  # not on the default search path
    with pytest.raises(TaskSpecError, match=r"Task 'triton-broken' cannot be loaded: .*field `entry_point`"):
        get_task("triton-broken", tasks_dir=user_tasks)


def test_env_var_adds_folders(user_tasks, monkeypatch):
    monkeypatch.setenv(TASKS_PATH_ENV, str(user_tasks))
    assert get_task("triton-rmsnorm-user").root == user_tasks / "triton" / "rmsnorm-user"
    assert "triton-rmsnorm-user" in discover_tasks()


def test_version_must_match():
    with pytest.raises(UnknownTaskError, match=r"task 'triton-rmsnorm' is at version 0 "
                                               r"\(KernelArena/triton-rmsnorm-v0\), not v3"):
        get_task("KernelArena/triton-rmsnorm-v3")
    assert parse_task_name("KernelArena/triton-rmsnorm-v12") == ("triton-rmsnorm", 12)
    assert parse_task_name("triton-my-v-task") == ("triton-my-v-task", None)


def test_user_task_reusing_a_builtin_name_is_an_error_naming_both(tmp_path):
    dup = copy_task(tmp_path / "dup" / "rmsnorm", None)
    tasks, problems = discover_tasks_report(task_search_path(tmp_path / "dup"))
    assert tasks["triton-rmsnorm"].root == BUILTIN
    (problem,) = problems
    assert problem.kind == "duplicate"
    assert str(dup / "task.yaml") in problem.message and str(BUILTIN) in problem.message
    with pytest.raises(TaskSpecError, match="task name 'triton-rmsnorm' is already taken by the built-in task at "
                                            + re.escape(str(BUILTIN))):
        get_task("triton-rmsnorm", tasks_dir=tmp_path / "dup")


def test_missing_folder_and_nested_task_yaml(tmp_path):
    root = tmp_path / "tasks"
    task = copy_task(root / "t", "nested-outer")
    copy_task(task / "data" / "inner", "nested-inner")  # inside a task: its data, not another task
    tasks, problems = discover_tasks_report([root, tmp_path / "nowhere"])
    assert list(tasks) == ["triton-nested-outer"]
    assert [p.kind for p in problems] == ["missing"] and "nowhere" in problems[0].message


def test_broken_task_never_breaks_import(user_tasks):
    # A fresh process: what a user with $KERNELGYM_TASKS_PATH set sees on `import kernelgym`.
    code = ("import json, warnings, gymnasium as gym\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    import kernelgym\n"
            "ids = sorted(k for k in gym.registry if k.startswith('KernelArena/'))\n"
            "print(json.dumps({'ids': ids, 'warnings': [(x.category.__name__, str(x.message)) for x in w]}))\n")
    env = {**os.environ, TASKS_PATH_ENV: str(user_tasks)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"KernelArena/triton-rmsnorm-user-v0", "KernelArena/triton-rmsnorm-v0"} <= set(out["ids"])
    assert not [i for i in out["ids"] if "broken" in i]
    (warning,) = [w for w in out["warnings"] if w[0] == DiscoveryWarning.__name__]
    assert str(user_tasks / "triton" / "broken" / "task.yaml") in warning[1] and "entry_point" in warning[1]


def test_register_tasks_dir_then_make(user_tasks, tmp_path, require_bwrap):
    env_id = "KernelArena/triton-rmsnorm-user-v0"
    try:
        with pytest.warns(DiscoveryWarning, match="broken/task.yaml"):
            ids = register_tasks(tasks_dir=user_tasks)
        assert env_id in ids and "KernelArena/triton-rmsnorm-v0" in ids
        # A user task is registered by its folder: the spec makes the same env in any process.
        assert gym.spec(env_id).kwargs == {"task": str(user_tasks / "triton" / "rmsnorm-user")}
        env = gym.make(env_id, run_dir=tmp_path / "runs")
        assert env.unwrapped.task.root == user_tasks / "triton" / "rmsnorm-user"
        env.close()
    finally:
        gym.registry.pop(env_id, None)


def test_make_with_tasks_dir(user_tasks, tmp_path, require_bwrap):
    env = gym.make("KernelArena/triton-rmsnorm-v0", tasks_dir=str(user_tasks), run_dir=tmp_path / "runs")
    assert env.unwrapped.task.root == BUILTIN
    env.close()
    env = KernelArenaEnv("triton-rmsnorm-user", tasks_dir=user_tasks, run_dir=tmp_path / "runs")
    assert env.task.root == user_tasks / "triton" / "rmsnorm-user"
    env.close()


def test_a_missing_tasks_dir_warns_even_where_the_task_is_found(tmp_path):
    from kernelgym.discovery import DiscoveryWarning, get_task
    missing = tmp_path / "no-such-folder"
    with pytest.warns(DiscoveryWarning, match="not a directory"):
        assert get_task("triton-rmsnorm", tasks_dir=missing).name == "triton-rmsnorm"
