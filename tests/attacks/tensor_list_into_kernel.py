"""Attack: a Python list of the wrapper's tensors passed into a Triton kernel. On the CPU interpreter a kernel's body
runs as Python, and Triton turns only tensors (and tuples of them) into pointers: the body gets the list of torch
tensors itself and computes the output with their methods (`ts[2].copy_(... .mean(-1) ... .rsqrt() ...)`), while the
launch counter counts an honest launch.

Defence: `launch_arguments_checked` (the launch counter's wrapper of `JITFunction.run` and `InterpretedFunction.run`
refuses, naming the parameter, any argument of a candidate's kernel that is not exactly a torch.Tensor, a scalar, a
dtype, a `tl.constexpr` of one, or a plain tuple of those; a tensor for a `tl.constexpr` parameter too). Tested with the
static check and the dynamic check off; the static check refuses this body's tensor methods too.
Honest twin: the rmsnorm baseline with its three pointers passed as one tuple (Triton's tuple arguments), which the
interpreter turns into pointers, scores 120.
"""
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import GraderConfig

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()
SIGNATURE = '''def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps,
                   BLOCK: tl.constexpr):
'''
LAUNCH = '''    rmsnorm_kernel[(n_rows,)](x2, weight, y, n_cols, x2.stride(0), y.stride(0), eps,
'''
# One program; the body is one expression statement (the interpreter rewrites assignments into Triton values).
LIST_KERNEL = '''@triton.jit
def list_kernel(ts):
    ts[2].copy_((ts[0].float() * ((ts[0].float() * ts[0].float()).mean(-1, keepdim=True) + ts[3]).rsqrt()
                 * ts[1].float()).to(ts[2].dtype))


def rmsnorm('''
LIST = BASELINE.replace("def rmsnorm(", LIST_KERNEL).replace(LAUNCH, '''    list_kernel[(1,)]([x2, weight, y, eps])
    return y.reshape(x.shape)
''' + LAUNCH)
TUPLE = BASELINE.replace(SIGNATURE, '''def rmsnorm_kernel(ptrs, n_cols, x_row_stride, y_row_stride, eps,
                   BLOCK: tl.constexpr):
    x_ptr = ptrs[0]
    w_ptr = ptrs[1]
    y_ptr = ptrs[2]
''').replace(LAUNCH, '''    rmsnorm_kernel[(n_rows,)]((x2, weight, y), n_cols, x2.stride(0), y.stride(0), eps,
''')
# Runs LIST on the interpreter without the harness: the body gets the list and its output is right.
UNGUARDED = '''
import os, sys
sys.path.insert(0, sys.argv[1])
from kernelgym.grader.protocol import load_function
ref = load_function(sys.argv[2], sys.argv[3], "reference")
x = __import__("torch").randn(4, 64)
w = __import__("torch").randn(64)
fn = load_function("kernel.py:rmsnorm", sys.argv[1], "candidate")
print(float((fn(x, w) - ref(x, w)).abs().max()))
'''


def _messages(g):
    return "\n".join(g.stages[1].messages)


def test_the_attack_sources_are_what_they_say():
    assert LIST.count("list_kernel[(1,)]([x2, weight, y, eps])") == 1 and LIST.count("@triton.jit") == 2
    assert TUPLE.count("(x2, weight, y)") == 1 and TUPLE.count("x_ptr = ptrs[0]") == 1


def test_without_the_check_the_interpreter_hands_the_body_the_list(tmp_path):
    (tmp_path / "kernel.py").write_text(LIST)
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, "-c", UNGUARDED, str(tmp_path), TASK.spec.reference, str(TASK.root)],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert float(out.stdout.split()[-1]) < 1e-3  # PyTorch in the kernel's body computed it


def test_a_list_of_tensors_into_a_kernel_is_refused_at_launch(grade):
    g = grade(LIST, config=GraderConfig(static_check=False, dynamic_check=False))
    assert g.compiled and not g.correct and g.score == 20.0, g.summary()
    text = _messages(g)
    assert "TypeError" in text and "parameter 'ts' got a builtins.list" in text, text


def test_a_list_of_tensors_fails_with_the_default_checks(grade):
    g = grade(LIST)
    assert g.compiled and not g.correct and g.score == 20.0, g.summary()


def test_honest_twin_a_tuple_of_tensors_scores_120(grade):
    g = grade(TUPLE)
    assert g.score == 120.0, g.summary()


def _kernel(*names, constexpr=()):
    def fn():
        pass
    fn.__annotations__ = {n: "tl.constexpr" for n in constexpr}
    fn.__name__ = "k"
    return SimpleNamespace(arg_names=list(names), fn=fn)


def test_the_checker_refuses_what_is_not_a_plain_value_and_passes_the_rest():
    import torch
    import triton
    import triton.language as tl

    from kernelgym.backends.triton import launch_argument_checker
    check = launch_argument_checker()
    kernel = _kernel("a", "b", "BLOCK", constexpr=("BLOCK",))
    x = torch.zeros(4)

    class Sub(torch.Tensor):
        pass

    # Passes: plain tensors, scalars, dtypes, constexprs, tuples, Triton's own wrapper, and launch options.
    check(kernel, (x, 3, 16), {"num_warps": 4, "grid": (1,), "warmup": False})
    check(kernel, ((x, (x, 2.5)), torch.float16, tl.constexpr(8)), {"num_stages": 2})
    check(kernel, (triton.reinterpret(x, tl.float32), None, True), {})
    check(kernel, (x,), {"b": "s", "BLOCK": tl.float32})
    refused = [((x, [x], 16), {}, "'b' got a builtins.list"),
               ((x.as_subclass(Sub), 1, 16), {}, "'a' got a"),
               ((x, 1, x), {}, "'BLOCK' got a torch.Tensor (a tensor for a tl.constexpr)"),
               ((x, 1), {"BLOCK": tl.constexpr(x)}, "'BLOCK' got a triton.language.core.constexpr"),
               ((x, 1, (x,)), {}, "'BLOCK' got a builtins.tuple"),
               ((x, {"t": x}, 16), {}, "'b' got a builtins.dict"),
               ((x, SimpleNamespace(t=x), 16), {}, "'b' got a types.SimpleNamespace")]
    for args, kwargs, message in refused:
        with pytest.raises(TypeError) as e:
            check(kernel, args, kwargs)
        assert message in str(e.value), (message, str(e.value))
