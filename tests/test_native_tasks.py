"""The native (CUDA C++, hipified on AMD) tasks under tasks/cuda on a machine without a GPU.

Without nvcc: every task loads with its kind, difficulty, guidance and roofline; its sources keep to what hipify
can carry; its reference is seeded and runs on its configs; its tolerances pass the answer a correct kernel gives
(the fp32 result rounded to the dtype, or for a torch2cuda task the PyTorch module itself run in the dtype) and fail
zeros and a named wrong answer; its unseen configs are valid; the static provenance check passes the pristine
sources of a cuda2cuda task and refuses those of a torch2cuda task (its baseline is the PyTorch module through ATen:
the bar to beat, not an answer), while a from-scratch answer (tests/kernels/cuda/<task>/) passes.
With nvcc: every task's and every known answer's kernel.cu compiles through the trusted build (nvcc -c, sm_90), and
every binding.cpp compiles with the host compiler (slow: half a CPU-minute each). Linking and running need a CUDA torch:
benchmarks/native_tasks_check.py grades the baselines on a GPU.
"""
import math
import shutil
from pathlib import Path

import pytest
import torch

from kernelgym.backends import cuda as backend
from kernelgym.config_space import violations
from kernelgym.discovery import discover_tasks
from kernelgym.grader import build as builds
from kernelgym.grader.compare import compare_output
from kernelgym.grader.protocol import load_function
from kernelgym.grader.provenance import check_cpp_source
from kernelgym.roofline import evaluate
from kernelgym.unseen.generator import generate_unseen_configs

NATIVE = {name: task for name, task in discover_tasks().items() if task.spec.language == "cuda"
          and task.root.parent.parent.name == "tasks"}
NAMES = sorted(NATIVE)
SOLUTIONS = Path(__file__).parent / "kernels" / "cuda"
#: Names hipify cannot carry to AMD (inline PTX, NVIDIA-only intrinsics and libraries) and spellings that assume a
#: 32-wide warp; the task sources avoid them all.
NOT_PORTABLE = ("asm(", "asm volatile", "ptx", "nvcuda::", "wmma", "__shfl", "__activemask", "__ballot",
                "cp.async", "__nanosleep", "cublas", "cudnn", "& 31", ">> 5", "warpSize")


def require_nvcc():
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found: compiling the CUDA sources needs the CUDA toolkit's nvcc on PATH (the tests "
                    "without it still check every task's reference, configs, tolerances and provenance)")


def inputs_and_reference(task, config, seed=0):
    make_inputs = load_function(task.spec.input_builder, str(task.root), f"native_ref_{task.spec.id}")
    reference = load_function(task.spec.reference, str(task.root), f"native_ref_{task.spec.id}")
    inputs = make_inputs(config, seed, "cpu")
    return inputs, reference(*inputs)


def passes(task, config, out, ref):
    """Whether `out` passes the grader's comparison against the fp32 `ref` on `config`."""
    output = task.spec.outputs[0]
    return compare_output(out, ref, output.dtype_for(config), output.rule_for(config),
                          task.spec.tolerance_for(output, config))[0]


def test_there_are_eight_native_tasks_half_of_each_kind():
    kinds = {name: NATIVE[name].spec.kind for name in NAMES}
    assert len(kinds) >= 8, kinds
    assert sum(k == "cuda2cuda" for k in kinds.values()) >= 4 and sum(k == "torch2cuda" for k in kinds.values()) >= 4
    assert set(kinds.values()) == {"cuda2cuda", "torch2cuda"}
    assert {k for k in kinds} >= {"cuda-gelu", "cuda-softmax", "cuda-rmsnorm", "cuda-attention"}


@pytest.mark.parametrize("name", NAMES)
def test_task_layout(name):
    task = NATIVE[name]
    spec = task.spec
    assert task.env_id == f"KernelArena/{name}-v0" and spec.difficulty in ("easy", "medium", "hard")
    assert len(spec.guidance) > 200 and spec.roofline is not None
    assert sorted(spec.editable_files) == ["binding.cpp", "kernel.cu"]
    assert spec.entry_point.startswith("binding.cpp:") and [str(p) for p in task.public_files()] == \
        ["binding.cpp", "kernel.cu", "reference.py"]
    fn = spec.entry_point.split(":")[1]
    binding = (task.root / "binding.cpp").read_text()
    assert "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)" in binding and f'm.def("{fn}", &{fn}' in binding
    assert "torch/" not in (task.root / "kernel.cu").read_text()  # torch headers cost nvcc a minute
    for cfg in task.configs_for(False) + task.configs_for(True):
        assert not violations(spec.config_space, cfg)
        assert evaluate(spec.roofline.bytes, cfg) > 0 and evaluate(spec.roofline.flops, cfg) > 0


@pytest.mark.parametrize("name", NAMES)
def test_sources_are_vendor_neutral(name):
    # The same source must build on AMD through PyTorch's hipify: no inline PTX or NVIDIA-only intrinsics, and no
    # reduction that assumes a 32-wide warp (AMD's is 64).
    task = NATIVE[name]
    for f in task.spec.editable_files:
        text = (task.root / f).read_text()
        code = "\n".join(line.split("//")[0] for line in text.splitlines())
        assert not [w for w in NOT_PORTABLE if w in code], f


@pytest.mark.parametrize("name", NAMES)
def test_static_check_passes_a_from_scratch_answer_and_refuses_torch_compute(name):
    task = NATIVE[name]
    sources = {f: (task.root / f).read_text() for f in task.spec.editable_files}
    findings = [str(f) for f in check_cpp_source(sources)]
    if task.spec.kind == "cuda2cuda":
        assert findings == []
        return
    # torch2cuda: the pristine binding is the PyTorch module through ATen, which a submission may not be.
    assert findings and all(f.startswith("binding.cpp:") for f in findings), findings
    answer = SOLUTIONS / task.spec.id
    assert check_cpp_source({f: (answer / f).read_text() for f in ("binding.cpp", "kernel.cu")}) == []
    assert backend.own_kernel_names({"kernel.cu": (answer / "kernel.cu").read_text()})


@pytest.mark.parametrize("name", NAMES)
def test_inputs_are_seeded_and_the_reference_runs_on_each_config(name):
    task = NATIVE[name]
    for cfg in task.configs_for(True):
        inputs, ref = inputs_and_reference(task, cfg)
        again, _ = inputs_and_reference(task, cfg)
        other, _ = inputs_and_reference(task, cfg, seed=1)
        tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
        assert all(torch.equal(a, b) for a, b in zip(tensors, again))
        assert not torch.equal(tensors[0], other[0])
        assert tensors[0].dtype == getattr(torch, cfg["dtype"]) and tensors[0].is_contiguous()
        assert ref.dtype == torch.float32 and bool(torch.isfinite(ref).all())


def _rmsnorm_module(task, cfg, inputs):
    x, w, eps = inputs
    module = load_function("reference.py:RMSNorm", str(task.root), "native_ref_rmsnorm")(x.shape[-1], eps)
    with torch.no_grad():
        module.weight = torch.nn.Parameter(w)
        return module(x)


def _swiglu_module(task, cfg, inputs):
    x, wg, wu, wd = inputs
    module = load_function("reference.py:SwiGLUMLP", str(task.root), "native_ref_swiglu")(x.shape[1], wg.shape[0])
    module = module.to(x.dtype)
    with torch.no_grad():
        for linear, w in ((module.gate, wg), (module.up, wu), (module.down, wd)):
            linear.weight.copy_(w)
        return module(x)


def _attention_module(task, cfg, inputs):
    return load_function("reference.py:CausalAttention", str(task.root), "native_ref_attention")()(*inputs)


#: What the baseline computes, on the CPU: the fp32 result rounded once to the dtype (cuda2cuda), or the PyTorch
#: module run in the inputs' dtype with its own intermediate roundings (torch2cuda). The tolerance must pass it.
BASELINE_LIKE = {
    "cuda-rmsnorm": _rmsnorm_module,
    "cuda-swiglu-mlp": _swiglu_module,
    "cuda-attention": _attention_module,
}


def _wrong(name, inputs, ref):
    """A plausible wrong answer per task (the mistake its tolerance must catch), in fp32."""
    x = inputs[0].float()
    if name == "cuda-silu-and-mul":  # the halves swapped
        d = x.shape[-1] // 2
        return torch.nn.functional.silu(x[:, d:]) * x[:, :d]
    if name == "cuda-softmax":  # exp2 without the log2(e) scale
        return torch.softmax(x * math.log(2.0), -1)
    if name == "cuda-layernorm":  # no centring (an RMSNorm)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * inputs[1].float() + inputs[2].float()
    if name == "cuda-rmsnorm":  # the weight left out
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    if name == "cuda-cross-entropy":  # the next label's logit
        labels = inputs[1]
        shifted = torch.where(labels >= 0, (labels + 1) % x.shape[1], labels)
        return torch.nn.functional.cross_entropy(x, shifted, reduction="none", ignore_index=-100)
    if name == "cuda-swiglu-mlp":  # gate and up swapped
        g, u = x @ inputs[1].float().T, x @ inputs[2].float().T
        return (torch.nn.functional.silu(u) * g) @ inputs[3].float().T
    if name == "cuda-attention":  # not causal
        return torch.nn.functional.scaled_dot_product_attention(x, inputs[1].float(), inputs[2].float())
    if name == "cuda-gelu":  # the sigmoid approximation x * sigmoid(1.702 x)
        return x * torch.sigmoid(1.702 * x)
    raise AssertionError(f"no wrong answer written for {name}")


@pytest.mark.parametrize("name", NAMES)
def test_tolerances_pass_the_baselines_answer_and_fail_zeros_and_a_wrong_one(name):
    task = NATIVE[name]
    out_dtype = task.spec.outputs[0]
    for cfg in task.configs_for(True):
        inputs, ref = inputs_and_reference(task, cfg)
        want = getattr(torch, out_dtype.dtype_for(cfg))
        like = BASELINE_LIKE.get(name)
        answer = like(task, cfg, inputs) if like else ref.to(want)
        assert answer.dtype == want and passes(task, cfg, answer, ref), cfg
        assert not passes(task, cfg, torch.zeros_like(answer), ref), cfg
        assert not passes(task, cfg, _wrong(name, inputs, ref).to(want), ref), cfg


@pytest.mark.parametrize("name", NAMES)
def test_unseen_configs_are_valid(name):
    task = NATIVE[name]
    configs, _ = generate_unseen_configs(task, seed=0, interpreter=False)
    assert len(configs) == 8
    for cfg in configs:
        assert not violations(task.spec.config_space, cfg), cfg
        assert cfg["dtype"] in task.spec.config_space.dtypes
    assert len({tuple(sorted((k, v) for k, v in c.items() if k != "model")) for c in configs}) > 1


@pytest.mark.parametrize("name", [n for n in NAMES if NATIVE[n].spec.kind == "torch2cuda"])
def test_torch2cuda_reference_is_the_module(name):
    # The reference is the module the task replaces, run in fp32: the module is public (reference.py), and the
    # baseline (binding.cpp) runs the same operations through ATen.
    task = NATIVE[name]
    text = (task.root / "reference.py").read_text()
    assert "(torch.nn.Module):" in text
    assert "not an answer" in task.spec.description and "torch2cuda" == task.spec.kind
    assert (task.root / "kernel.cu").read_text().count("__global__") == 0  # the baseline has no kernel of its own


# -- with nvcc ---------------------------------------------------------------------------------------------------
KERNEL_SOURCES = [(name, NATIVE[name].root) for name in NAMES] + \
    [(f"answer-{p.name}", p) for p in sorted(SOLUTIONS.iterdir()) if p.is_dir()]


@pytest.mark.parametrize("name, folder", KERNEL_SOURCES, ids=[n for n, _ in KERNEL_SOURCES])
def test_kernel_sources_compile_with_nvcc(name, folder, tmp_path, require_bwrap):
    require_nvcc()
    result = builds.build(backend, folder, ["kernel.cu"], "kernel.cu:entry", sandbox="bwrap", timeout_s=300,
                          root=tmp_path / "cache")
    assert result.ok, result.log
    assert "nvcc" in result.log and "compile-only check" in result.log and "-O3" in result.log


BINDINGS = [(n, f) for n, f in KERNEL_SOURCES if n != "cuda-gelu"]  # gelu's full build: tests/test_cuda_backend.py


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name, folder", BINDINGS, ids=[n for n, _ in BINDINGS])
def test_binding_compiles(name, folder, tmp_path, require_bwrap):
    """Slow: the host compiler on torch's headers, about half a CPU-minute per binding."""
    require_nvcc()
    result = builds.build(backend, folder, ["binding.cpp"], "binding.cpp:entry", sandbox="bwrap", timeout_s=1100,
                          root=tmp_path / "cache")
    assert result.ok, result.log[-3000:]
    assert "compile-only check" in result.log and "binding.cpp" in result.log


def test_a_build_past_its_time_limit_is_killed_and_not_cached(tmp_path, require_bwrap):
    # The compile gate's limit (grader.BUILD_TIMEOUT_S for a grading): torch's headers alone take the host compiler
    # far longer than 2 s, with or without nvcc.
    task = NATIVE["cuda-silu-and-mul"]
    result = builds.build(backend, task.root, ["binding.cpp"], "binding.cpp:silu_and_mul", sandbox="bwrap",
                          timeout_s=2, root=tmp_path / "cache")
    assert not result.ok and result.directory is None
    assert "ran past the 2 s limit and was killed" in result.log
    assert not list((tmp_path / "cache").iterdir())  # nothing cached, no temporary build left behind


def test_the_grader_limits_builds():
    from kernelgym.grader import grader
    assert 60 <= grader.BUILD_TIMEOUT_S <= 1800 and math.isfinite(grader.BUILD_TIMEOUT_S)
