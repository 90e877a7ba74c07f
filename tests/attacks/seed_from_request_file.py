"""Attack: the candidate reads the grading's seed, the one the check inputs are made from, and prints it into the
final observation (an exception at import, whose traceback the grade shows), or uses it to tell checked calls from
timed ones: the harness's request file in its grading directory held it.

Defence: `seed_out_of_reach` (the harness's forked child that builds the inputs deletes the request file as soon as it
has read it, before any candidate code runs, and the request the candidate's process holds has no seed; the parent
keeps its own copy). Honest twin: the task's own
kernel grades 120 with the same grader (tests/test_grader.py).

`PRINT_THE_SEED` is the attack kernel; it is a string so that collecting this file never runs it.
"""
from kernelgym.grader import GraderConfig

PRINT_THE_SEED = r'''
import json, os, sys
_found = []
for _d in {os.path.dirname(os.path.abspath(__file__)), os.getcwd(), *sys.path[:3]}:
    _p = os.path.join(_d, "request.json")
    if os.path.exists(_p):
        _found.append(json.load(open(_p)).get("seed"))
_main = sys.modules.get("__main__")
for _name in dir(_main):
    _obj = getattr(_main, _name, None)
    if isinstance(getattr(_obj, "seed", None), int):
        _found.append(_obj.seed)
raise RuntimeError(f"LEAK seeds={_found}")
'''


def test_the_seed_is_not_in_the_grading_directory_or_the_harness_module(grade):
    g = grade(PRINT_THE_SEED, config=GraderConfig(static_check=False))
    text = g.summary() + "\n".join(m for s in g.stages for m in s.messages)
    assert "LEAK seeds=" in text  # the payload ran and its message reached the observation
    assert "LEAK seeds=[]" in text, text[-2000:]  # and found no seed (the grading's seed is 7)
