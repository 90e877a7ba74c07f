"""The CUDA backend (kernelgym/backends/cuda.py) and its first task, cuda-gelu, on a machine without a GPU: the task
validates, the build cache key follows the sources' bytes, the grader refuses the CPU interpreter, and where nvcc
exists the trusted build compile-checks the baseline, reports a compiler error with its log, and serves unchanged
sources from the cache. Linking and running need a CUDA torch: benchmarks/cuda_task_check.py does that on a GPU."""
import re
import shutil

import pytest
import torch

from kernelgym.backends import cuda as backend
from kernelgym.backends import get_backend
from kernelgym.config_space import violations
from kernelgym.errors import TaskSpecError
from kernelgym.grader import Grader
from kernelgym.grader import build as builds
from kernelgym.grader.protocol import load_function
from kernelgym.hardware import detect_profile
from kernelgym.task import DEFAULT_TASKS_ROOT, load_task

TASK_DIR = DEFAULT_TASKS_ROOT / "cuda" / "gelu"


def require_nvcc():
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found: the CUDA compile check needs the CUDA toolkit's nvcc on PATH")


@pytest.fixture
def task_copy(tmp_path):
    dest = tmp_path / "gelu"
    shutil.copytree(TASK_DIR, dest)
    return dest


def test_task_loads_and_is_wired_to_the_cuda_backend():
    task = load_task(TASK_DIR)
    spec = task.spec
    assert task.env_id == "KernelArena/cuda-gelu-v0" and spec.kind == "cuda2cuda" and spec.difficulty == "easy"
    assert get_backend(spec.language) is backend
    assert [str(p) for p in task.public_files()] == ["binding.cpp", "kernel.cu", "reference.py"]
    assert spec.entry_point == "binding.cpp:gelu" and "PYBIND11_MODULE" in (TASK_DIR / "binding.cpp").read_text()
    assert "torch/" not in (TASK_DIR / "kernel.cu").read_text()  # kept out of nvcc: torch headers cost a minute
    assert {c["dtype"] for c in spec.seen_configs} == {"float16", "bfloat16", "float32"}
    assert not any(violations(spec.config_space, c) for c in spec.seen_configs + spec.interpreter_configs)


@pytest.mark.parametrize("config", load_task(TASK_DIR).spec.interpreter_configs, ids=lambda c: c["dtype"])
def test_inputs_are_seeded_and_tolerances_refuse_zeros_and_the_tanh_approximation(config):
    task = load_task(TASK_DIR)
    make_inputs = load_function(task.spec.input_builder, str(TASK_DIR), "cuda_gelu_reference")
    gelu = load_function(task.spec.reference, str(TASK_DIR), "cuda_gelu_reference")
    (x,) = make_inputs(config, 7, "cpu")
    assert x.dtype == getattr(torch, config["dtype"]) and x.shape == (config["tokens"], config["hidden"])
    assert torch.equal(x, make_inputs(config, 7, "cpu")[0])
    assert not torch.equal(x, make_inputs(config, 8, "cpu")[0])
    ref = gelu(x)
    tol = task.spec.tolerance[config["dtype"]]

    def passes(out):
        return bool(torch.allclose(out.float(), ref, atol=tol.atol, rtol=tol.rtol))

    assert ref.dtype == torch.float32
    assert passes(torch.nn.functional.gelu(x.double()).to(x.dtype))  # the exact GELU, rounded to the dtype
    assert not passes(torch.zeros_like(x))
    big = 2.7 * torch.ones(64, dtype=x.dtype)  # where the tanh form is furthest from erf
    ref = gelu(-big)
    assert not passes(torch.nn.functional.gelu(-big.double(), approximate="tanh").to(x.dtype))


def test_backend_surface():
    assert backend.LANGUAGE == "cuda" and backend.VENDORS == frozenset({"nvidia", "amd"})
    assert backend.BUILDS and backend.INTERPRETER_ENV is None and backend.SOURCE_SUFFIXES == (".cu", ".cpp")
    assert backend.LaunchCounter is None  # no in-process provenance for compiled launches
    assert "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)" in backend.PROMPT
    assert "refused in every source" in backend.PROMPT and "no inline PTX" in backend.PROMPT  # torch2cuda's rule
    tid = backend.toolchain_id()
    assert f"torch {torch.__version__}" in tid and "python " in tid
    if shutil.which("nvcc"):
        assert "release" in tid  # nvcc's version line


def test_build_key_follows_source_bytes_only(task_copy, tmp_path, monkeypatch):
    files = builds.source_files(backend, task_copy, ["kernel.cu", "binding.cpp"], "binding.cpp:gelu")
    assert files == ["binding.cpp", "kernel.cu"]
    key = builds.build_key(backend, task_copy, files)
    assert builds.build_key(backend, TASK_DIR, files) == key  # same bytes elsewhere: same key
    (task_copy / "kernel.cu").touch()
    assert builds.build_key(backend, task_copy, files) == key  # a newer mtime is not a change
    source = (task_copy / "kernel.cu").read_bytes()
    (task_copy / "kernel.cu").write_bytes(source.replace(b"128", b"256", 1))
    assert builds.build_key(backend, task_copy, files) != key
    (task_copy / "kernel.cu").write_bytes(source)
    assert builds.build_key(backend, task_copy, files) == key
    assert builds.build_key(backend, task_copy, files, "sm_90") != builds.build_key(backend, task_copy, files, "sm_80")
    monkeypatch.setattr(backend, "toolchain_id", lambda: "another compiler")
    assert builds.build_key(backend, task_copy, files) != key


def test_load_entry_refuses_a_compile_only_build(tmp_path):
    (tmp_path / backend.BUILT).write_text("ok\n")
    (tmp_path / backend.COMPILE_ONLY).write_text("not linked\n")
    with pytest.raises(RuntimeError, match="compiled but not linked: this torch has no CUDA") as info:
        backend.load_entry("binding.cpp:gelu", str(tmp_path), "kernelgym_candidate", str(tmp_path))
    assert backend.is_compile_error(info.value)
    with pytest.raises(RuntimeError, match="loads only a built extension"):
        backend.load_entry("binding.cpp:gelu", str(tmp_path), "kernelgym_candidate", None)
    assert not backend.is_compile_error(RuntimeError("CUDA error: an illegal memory access was encountered"))


def test_grader_refuses_cuda_on_the_cpu_interpreter(tmp_path):
    task = load_task(TASK_DIR)
    with pytest.raises(TaskSpecError, match=re.escape("task cuda-gelu is written in cuda, which runs on amd, nvidia "
                                                      "hardware;")):
        Grader(task, detect_profile("cpu-interpreter"), tmp_path / "work")


def test_a_syntax_error_fails_the_build_with_the_compiler_log(task_copy, tmp_path, require_bwrap):
    require_nvcc()
    source = (task_copy / "kernel.cu").read_text()
    (task_copy / "kernel.cu").write_text(source.replace("if (i < n) {", "if (i < n) { int oops = ;", 1))
    # kernel.cu alone (no torch headers): seconds, not the binding's minute.
    result = builds.build(backend, task_copy, ["kernel.cu"], "kernel.cu:gelu", sandbox="bwrap", timeout_s=300,
                          root=tmp_path / "cache")
    assert not result.ok and result.directory is None and not result.cached
    assert "kernel.cu" in result.log and "expected an expression" in result.log and "BUILD FAILED" in result.log
    assert not list((tmp_path / "cache").iterdir())  # nothing cached, no temporary build left behind


@pytest.mark.timeout(900)
def test_baseline_compile_checks_then_comes_from_the_cache(tmp_path, require_bwrap, monkeypatch):
    """Slow: about a minute of CPU, nearly all of it the host compiler on <torch/extension.h> in binding.cpp."""
    require_nvcc()
    task = load_task(TASK_DIR)
    spec = task.spec
    first = builds.build(backend, TASK_DIR, spec.editable_files, spec.entry_point, sandbox="bwrap", timeout_s=600,
                         root=tmp_path / "cache")
    assert first.ok and not first.cached, first.log
    assert "nvcc" in first.log and "compile-only check" in first.log
    assert {p.name for p in first.directory.iterdir()} >= {backend.BUILT, backend.COMPILE_ONLY, backend.MODULE}
    with pytest.raises(RuntimeError, match="compiled but not linked"):
        backend.load_entry(spec.entry_point, str(TASK_DIR), "kernelgym_baseline", str(first.directory))

    def no_sandbox(*args, **kwargs):
        raise AssertionError("a cached build must not start the compiler")
    monkeypatch.setattr(builds, "make_sandbox", no_sandbox)
    second = builds.build(backend, TASK_DIR, spec.editable_files, spec.entry_point, sandbox="bwrap",
                          root=tmp_path / "cache")
    assert second.ok and second.cached and second.directory == first.directory and "cached" in second.log
