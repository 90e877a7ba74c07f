"""Attack: the candidate writes check_result.json itself, with an error that is 900 levels of nested JSON lists,
then exits: the structure would reach the grade (and info["grade"], serialized by the env) as it is.

Defence: `candidate_text_capped` (the result is parsed at the boundary: every value the candidate reports becomes a
string cut to its tail; JSON errors, RecursionError included, are file errors).
Honest twin: a real compile error reaches the grade as its message (tests/test_grader.py, test_syntax_error_scores_0).
"""
import json

from kernelgym.discovery import get_task

BASELINE = (get_task("triton-rmsnorm").root / "kernel.py").read_text()


def test_nested_json_error_from_the_candidate_cannot_crash_the_grade(grade):
    src = BASELINE + '''
import os as _os
_d = _os.path.dirname(_os.path.abspath(__file__))
with open(_os.path.join(_d, "check_result.json"), "w") as _f:
    _f.write('{"stage": "compile", "error": ' + "[" * 900 + "]" * 900 + "}")
_os._exit(0)
'''
    g = grade(src)
    assert g.score == 0.0 and not g.compiled
    json.dumps(g.to_dict())  # info["grade"] stays serializable
