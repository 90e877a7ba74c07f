"""Attack: a native task's source written so that the grader's scans of it take time quadratic in its size (found by
review: repeated `__global__` inside `#if 0`, unclosed comments, and many `//` comments, each of which copied the rest
of the file): about two hours in the trusted parent for a 4 MiB file, the cap on an editable file.

Defence: `linear_source_scans` (own_kernel_names's patterns may end at the end of the text, so an unclosed construct
is one match, not a scan from every later start; the C++ tokenizer finds each line's end without copying).
Honest twin: the kernel names of an ordinary source are still found.
"""
import subprocess
import sys

import pytest

from kernelgym.backends.cuda import own_kernel_names


@pytest.mark.parametrize("unit", ["__global__ ", "/* ", "__launch_bounds__( ", "\" ", "// x\n"])
def test_scanning_a_mib_of_each_pattern_finishes(unit):
    """1 MiB of each pattern, in a process of its own that must finish within 60 s (quadratic: many minutes)."""
    code = ("from kernelgym.backends.cuda import own_kernel_names\nfrom kernelgym.grader.provenance import "
            f"_cpp_tokens\ntext = {unit!r} * ((1 << 20) // {len(unit)})\nown_kernel_names({{'a.cu': text}})\n"
            "_cpp_tokens(text)\nprint('DONE')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "DONE" in proc.stdout, proc.stderr[-2000:]


def test_honest_twin_kernel_names_are_found():
    source = ("__global__ void __launch_bounds__(256) k1(float* x) {}\n/* __global__ void no() {} */\n"
              "template <int N> __global__ void k2(int a) {}\n")
    assert own_kernel_names({"a.cu": source}) == {"k1", "k2"}
