"""Attack: a source Python versions read differently, or one the check decodes differently from the importer: a NUL
byte (Python 3.10 raises ValueError where 3.11 raises SyntaxError; either raised out of the check), bytes that are not
UTF-8 (replaced, the checked text differs from the imported one), or a file over the editable-file cap.

Defences: `source_bytes_judged` (the bytes are judged before anything parses them: each of these fails compile with a
message naming the file and the line).
Honest twin: the baseline's bytes, as they are, score 120 (tests/test_grader.py).
"""
import shutil

import pytest

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.grader.provenance import source_errors
from kernelgym.hardware import detect_profile

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_bytes()
CAP = 4 << 20


@pytest.mark.parametrize("data, expected", [
    (BASELINE + b"\n# \x00\n", "NUL byte"),
    (BASELINE + b"\n# \xff\xfe\n", "not valid UTF-8"),
    (BASELINE + b"#" * CAP, "over the cap"),
])
def test_unreadable_bytes_are_named(data, expected):
    errors = source_errors({"kernel.py": data}, CAP)
    assert len(errors) == 1 and expected in errors[0].what and errors[0].rule == "source_readable", errors


def test_a_nul_byte_fails_compile_through_the_grader(tmp_path, require_bwrap):
    ws = tmp_path / "ws"
    ws.mkdir()
    for rel in TASK.public_files():
        shutil.copy(TASK.root / rel, ws / rel)
    (ws / "kernel.py").write_bytes(BASELINE + b"\n# \x00\n")
    g = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig()).grade(ws, seed=7)
    assert not g.compiled and g.score == 0.0
    assert any("NUL byte" in m for m in g.stages[0].messages), g.stages[0].messages


def test_honest_twin_the_baselines_bytes_are_readable():
    assert source_errors({"kernel.py": BASELINE}, CAP) == []
