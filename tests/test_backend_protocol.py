"""The Backend protocol (issue 23): every built-in backend implements it whole, the grader reads a backend only
through it, and a toy backend registered from a test folder grades a task without touching kernelgym/grader/."""
import re
import shutil
from pathlib import Path

import pytest

import kernelgym.backends as backends
from kernelgym.backends import Backend, available_languages, get_backend, register_backend
from kernelgym.backends.protocol import MEMBERS, check_backend
from kernelgym.errors import TaskSpecError

DATA = Path(__file__).parent / "data"
TOY_BACKEND = DATA / "toy_backend" / "toy.py"
TOY_TASK = DATA / "toy_tasks" / "toy" / "scale"


@pytest.fixture
def registry(monkeypatch):
    """The backend registry, restored after the test (registrations are per process)."""
    monkeypatch.setattr(backends, "_REGISTERED", {})
    monkeypatch.setattr(backends, "_LOADED", dict(backends._LOADED))
    return backends


@pytest.mark.parametrize("language", ["triton", "cuda"])
def test_builtin_backends_implement_every_member(language):
    backend = get_backend(language)
    assert isinstance(backend, Backend)
    check_backend(backend, backends.backend_path(language))
    assert {"LaunchCounter", "load_entry", "KERNEL_CACHE_DIR", "STATIC_CHECK", "own_kernel_names"} <= set(MEMBERS)


def test_the_grader_reads_backends_only_through_the_protocol():
    package = Path(backends.__file__).parent.parent
    readers = [*(package / "grader").glob("*.py"), *(package / "workspace_tools").glob("*.py")]
    probes = [f"{p.name}:{i}: {line.strip()}" for p in readers
              for i, line in enumerate(p.read_text().splitlines(), 1)
              if re.search(r"(hasattr|getattr)\((self\.|state\.)?backend\b", line) or "TRITON_CACHE" in line]
    assert probes == []


def test_a_backend_lacking_a_member_is_refused_by_name(registry, tmp_path):
    partial = tmp_path / "partial.py"
    text = TOY_BACKEND.read_text()
    partial.write_text(re.sub(r"(?m)^PROMPT = .*\n", "", text).replace('LANGUAGE = "toy"', 'LANGUAGE = "partial"'))
    with pytest.raises(TaskSpecError, match=r"does not implement PROMPT \(every member"):
        register_backend(partial)
    misnamed = tmp_path / "other.py"
    misnamed.write_text(text)
    with pytest.raises(TaskSpecError, match=r"LANGUAGE is 'toy', but the file must be named after its language"):
        register_backend(misnamed)
    with pytest.raises(TaskSpecError, match="is a built-in backend"):
        shutil.copy(TOY_BACKEND, tmp_path / "triton.py")
        register_backend(tmp_path / "triton.py")
    assert "partial" not in available_languages() and "other" not in available_languages()
    # Members of the wrong type, and an interpreter vendor without the interpreter's environment (found by review).
    for bad, message in (('BUILDS = False', 'BUILDS = "False"'), ('VENDORS = frozenset({"cpu"})', 'VENDORS = "cpu"'),
                         ('INTERPRETER_ENV = {"KERNELGYM_TOY": "1"}', 'INTERPRETER_ENV = None')):
        lying = tmp_path / "lying" / "toy.py"
        lying.parent.mkdir(exist_ok=True)
        lying.write_text(text.replace(bad, message))
        with pytest.raises(TaskSpecError, match="BUILDS is str|VENDORS is str|INTERPRETER_ENV is None"):
            register_backend(lying)
    # A link named after another language still serves a module whose LANGUAGE is the file's own.
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "toy2.py").symlink_to(TOY_BACKEND)
    with pytest.raises(TaskSpecError, match="LANGUAGE is 'toy', but the file must be named after its language"):
        register_backend(tmp_path / "links" / "toy2.py")
    exits = tmp_path / "exits" / "toy.py"
    exits.parent.mkdir()
    exits.write_text("raise SystemExit(0)\n")
    with pytest.raises(TaskSpecError, match="does not import: SystemExit"):
        register_backend(exits)
    with pytest.raises(TaskSpecError, match="a language name is lower-case"):
        get_backend("../../tmp/evil")


def test_backends_path_adds_a_language(registry, monkeypatch):
    assert "toy" not in available_languages()
    with pytest.raises(TaskSpecError, match="no backend for language 'toy'"):
        get_backend("toy")
    monkeypatch.setenv("KERNELGYM_BACKENDS_PATH", str(TOY_BACKEND.parent))
    assert "toy" in available_languages() and get_backend("toy").LANGUAGE == "toy"


def test_a_toy_backend_from_a_test_folder_grades_a_task(registry, tmp_path, require_bwrap):
    from kernelgym.env import KernelArenaEnv
    from kernelgym.hardware import language_vendors
    assert register_backend(TOY_BACKEND) == "toy"
    assert language_vendors("toy") == {"cpu"}  # its VENDORS, no table elsewhere
    env = KernelArenaEnv(str(TOY_TASK), hardware="cpu-interpreter", run_dir=tmp_path, max_steps=5)
    try:
        rewards = []
        for kernel in (None, "def scale_kernel(x):\n    return x * 3\n\n\ndef scale(x):\n    return scale_kernel(x)\n",
                       "def scale_kernel(x):\n    return x * 2\n\n\ndef scale(x):\n    return x * 2\n"):
            obs, _ = env.reset(seed=0)
            assert "Language: toy" in obs["prompt"]  # the backend's PROMPT
            if kernel is not None:
                env.step({"kind": "write_file", "path": "kernel.py", "content": kernel})
            obs, reward, terminated, _, info = env.step({"kind": "submit"})
            rewards.append(reward)
            assert terminated and info["grade"]["checks"]["static_check"] == "off"  # STATIC_CHECK = False
        assert rewards == [120.0, 20.0, 20.0]  # correct; wrong values; right values but no toy kernel launched
        assert "no toy kernel from the candidate's files was launched" in obs["output"]  # its LaunchCounter
        # The agent's shell commands get the backend's INTERPRETER_ENV on the interpreter.
        env.reset(seed=1)
        obs, *_ = env.step({"kind": "shell", "cmd": "echo toy=$KERNELGYM_TOY"})
        assert "toy=1" in obs["output"]
    finally:
        env.close()
