"""Attack: the wrapper launches a token kernel (one row, so the launch counter is satisfied) and computes the output
with PyTorch on the host: tensor operators (`y[:] = xf * ... * w`, which the static check cannot tell from integer
arithmetic), or an index (`out[...] = weight[ids]` for the embedding task). Where no outside observer runs (the CPU
interpreter, AMD) nothing else sees it. A second form pops the harness's dispatch mode first, to compute unseen.

Defence: `dynamic_torch_op_check` (the harness records every PyTorch operator a checked call runs in a dispatch mode
of its own, and fails a config where one computes, or where the call changed the dispatch-mode stack). Tested with
the static check off, which a form it cannot read would be.
Honest twin: the baseline, and a wrapper that runs only allowed operators (`.contiguous()`, `torch.zeros_like`,
`fill_`), score 120 with the dynamic check passed.
"""
import shutil

import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()
LAUNCH = '''    rmsnorm_kernel[(n_rows,)](x2, weight, y, n_cols, x2.stride(0), y.stride(0), eps,
                              BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS)
'''
TOKEN_LAUNCH = '''    rmsnorm_kernel[(1,)](x2, weight, y, n_cols, x2.stride(0), y.stride(0), eps,
                         BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS)
'''
# The token launch writes row 0; PyTorch computes every row.
HOST_MATH = '''    xf = x2.float()
    ms = sum((xf * xf).unbind(-1)) / n_cols
    y[:] = (xf * (ms[:, None] + eps) ** -0.5 * weight.float()).to(y.dtype)
'''
ARITHMETIC = BASELINE.replace(LAUNCH, TOKEN_LAUNCH + HOST_MATH)
# The same, with the harness's mode popped first (and not pushed back: the stack then differs after the call).
POPPED = BASELINE.replace(LAUNCH, TOKEN_LAUNCH + '''    import torch.utils._python_dispatch as d
    d._pop_mode()
''' + HOST_MATH)
HONEST = BASELINE.replace('''    y = torch.empty_like(x2)
''', '''    x2 = x2.contiguous()
    y = torch.zeros_like(x2)
    y.fill_(0.0)
''')

EMBEDDING = get_task("triton-embedding")
EMBEDDING_BASELINE = (EMBEDDING.root / "kernel.py").read_text()
GATHER = EMBEDDING_BASELINE.replace("embedding_kernel[(n_tokens,)](", "embedding_kernel[(1,)](").replace(
    "    return out\n", "    out[...] = weight[ids.long()]\n    return out\n")


def _messages(g):
    return "\n".join(g.stages[1].messages)


def test_the_attack_sources_are_what_they_say():
    assert ARITHMETIC.count(TOKEN_LAUNCH) == 1 and POPPED.count("_pop_mode()") == 1 and HONEST != BASELINE
    assert GATHER.count("embedding_kernel[(1,)](") == 1 and "weight[ids.long()]" in GATHER


def test_without_the_dynamic_check_host_arithmetic_passes(grade):
    # What the defence is for: with neither check, the token launch and PyTorch's rows earn full marks.
    g = grade(ARITHMETIC, config=GraderConfig(static_check=False, dynamic_check=False))
    assert g.score == 120.0, g.summary()
    assert g.checks["dynamic_check"] == "off"


def test_host_arithmetic_beside_a_token_launch_fails_the_dynamic_check(grade):
    g = grade(ARITHMETIC, config=GraderConfig(static_check=False))
    assert g.compiled and not g.correct and g.score == 20.0, g.summary()
    text = _messages(g)
    assert "provenance: PyTorch computed" in text and "`aten.mul.Tensor`" in text, text
    assert g.checks["dynamic_check"] == "failed" and g.checks["static_check"] == "off"
    assert all(not c["correct"] for c in g.configs)


def test_host_arithmetic_fails_with_the_default_checks(grade):
    g = grade(ARITHMETIC)
    assert g.compiled and not g.correct and g.score == 20.0, g.summary()


def test_popping_the_harness_mode_fails(grade):
    g = grade(POPPED, config=GraderConfig(static_check=False))
    assert g.compiled and not g.correct and g.score == 20.0, g.summary()
    assert "pushed or popped a torch dispatch mode" in _messages(g), _messages(g)
    assert g.checks["dynamic_check"] == "failed"


def test_an_index_on_the_host_fails(tmp_path, require_bwrap):
    ws = tmp_path / "ws"
    ws.mkdir()
    for rel in EMBEDDING.public_files():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(EMBEDDING.root / rel, ws / rel)
    (ws / "kernel.py").write_text(GATHER)
    g = Grader(EMBEDDING, detect_profile("cpu-interpreter"), tmp_path / "grading",
               GraderConfig(static_check=False)).grade(ws, seed=3)
    assert g.compiled and not g.correct and g.score == 20.0, g.summary()
    assert "`aten.index.Tensor`" in _messages(g), _messages(g)


@pytest.mark.parametrize("source", [BASELINE, HONEST], ids=["baseline", "allowed-ops"])
def test_honest_twin_scores_120_with_the_dynamic_check_passed(grade, source):
    g = grade(source)
    assert g.score == 120.0, g.summary()
    assert g.checks["dynamic_check"] == "passed" and g.checks["static_check"] == "passed"
