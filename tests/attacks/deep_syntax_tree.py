"""Attack: an editable file whose syntax tree is deeper than a recursive walk can follow (found by review:
one line `_z = a.b.b...` with 800 attributes; here `x.view(-1)...` 800 times, under `if False:`), so the check raises RecursionError and with it
`Grader.grade` and `env.step`, instead of grading; or deeper than Python's own parser can read.

Defence: `static_check_depth` (the check walks with an explicit stack, so any tree the parser reads is judged; a file
the parser cannot read is a finding of its own: the provenance gate fails with that reason).
Honest twin: the built-in baselines pass the static check (tests/test_provenance.py).
"""
from kernelgym.grader import provenance
from kernelgym.grader.provenance import check_source


def test_a_syntax_tree_too_deep_to_recurse_is_judged_not_raised():
    # The chain is of methods the host may call, so the deep file is honest apart from its depth.
    deep = "import torch\n\ndef rmsnorm(x, w, eps=1e-6):\n    if False:\n        _z = x" + ".view(-1)" * 800 + "\n    return x\n"
    assert check_source({"kernel.py": deep}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference") == []
    cheat = deep.replace("_z = x", "_z = torch.nn.functional.silu(x)")
    findings = check_source({"kernel.py": cheat}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")
    assert [f.rule for f in findings] == ["module_names_allowed"], findings


def test_a_file_the_parser_runs_out_of_memory_on_is_refused_not_raised():
    """Found by review: 100,000 unary minuses make Python's parser raise MemoryError."""
    deep = "import torch\n\ndef rmsnorm(x, w, eps=1e-6):\n    _z = " + "-" * 100_000 + "1\n    return x\n"
    findings = check_source({"kernel.py": deep}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference")
    assert [f.what for f in findings] == [provenance.TOO_DEEP]


def test_honest_twin_a_shallow_file_is_read():
    shallow = "import torch\n\ndef rmsnorm(x, w, eps=1e-6):\n    _z = x" + ".view(-1)" * 20 + "\n    return x\n"
    assert check_source({"kernel.py": shallow}, "kernel.py:rmsnorm", "reference.py:rmsnorm_reference") == []
