"""Attack: a command prints without end (here a megabyte; `yes` alone would never stop) to exhaust the env's memory
and bury the observation.

Defence: `output_head_tail_cut` (output is read as it comes; only its head and tail are kept, with a count of what
was cut).
Honest twin: a short output comes back whole (every other sandbox test).
"""
from kernelgym.sandbox import Limits


def test_output_cut_says_so(box):
    r = box.run("yes | head -c 1000000", limits=Limits(max_output_bytes=1000))
    assert r.cut_bytes > 990_000 and "bytes of output cut" in r.output
    assert len(r.output) < 2000
