"""The baseline's kernel cache (kernelgym/grader/grader.py: `_keep_kernel_cache`, `_seed_kernel_cache`, kept in
kernelgym/grader/cache.py): kept from a prepared grading before any candidate code runs there, the first time only,
and seeded into later grading directories with Triton's group files pointing at the new place; kept on disk, so a
grader of another process finds it. The GPU compile it saves is measured on the H200, not here."""
import json
import subprocess
import sys

from kernelgym.grader.cache import GRADING_CACHE
from kernelgym.discovery import get_task
from kernelgym.grader import Grader
from kernelgym.hardware import all_profiles, detect_profile

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()


def _fake_cache(gdir, cubin: bytes):
    folder = gdir / ".triton-cache" / "HASH"
    folder.mkdir(parents=True)
    (folder / "k.cubin").write_bytes(cubin)
    (folder / "k.json").write_text("{}")
    (folder / "__triton_launcher.so").write_bytes(b"launcher")
    (folder / "__grp__k.json").write_text(json.dumps({"child_paths": {
        "k.cubin": str(folder / "k.cubin"), "k.json": str(folder / "k.json")}}))
    return folder


def test_kept_once_before_the_candidate_and_seeded_into_later_gradings(tmp_path):
    grader = Grader(TASK, all_profiles()["h200"], tmp_path / "grading")
    first = tmp_path / "grading" / "grade-1"
    folder = _fake_cache(first, b"baseline")
    grader._keep_kernel_cache(first)
    (folder / "k.cubin").write_bytes(b"the candidate's")  # what the candidate does later in its own grading
    grader._keep_kernel_cache(first)  # the first copy stands
    second = tmp_path / "grading" / "grade-2"
    second.mkdir()
    grader._seed_kernel_cache(second)
    seeded = second / ".triton-cache" / "HASH"
    assert (seeded / "k.cubin").read_bytes() == b"baseline" and (seeded / "__triton_launcher.so").is_file()
    group = json.loads((seeded / "__grp__k.json").read_text())["child_paths"]
    assert group == {"k.cubin": str(seeded / "k.cubin"), "k.json": str(seeded / "k.json")}


SEED_IN_ANOTHER_PROCESS = """
import sys
from pathlib import Path
from kernelgym.discovery import get_task
from kernelgym.grader import Grader
from kernelgym.hardware import all_profiles
grader = Grader(get_task("triton-rmsnorm"), all_profiles()["h200"], Path(sys.argv[1]))
dest = Path(sys.argv[1]) / "grade-3"
dest.mkdir()
grader._seed_kernel_cache(dest)
print((dest / ".triton-cache" / "HASH" / "k.cubin").read_bytes().decode())
"""


def test_a_grader_of_another_process_finds_the_kept_cache(tmp_path):
    grader = Grader(TASK, all_profiles()["h200"], tmp_path / "grading")
    first = tmp_path / "grading" / "grade-1"
    _fake_cache(first, b"baseline")
    grader._keep_kernel_cache(first)
    out = subprocess.run([sys.executable, "-c", SEED_IN_ANOTHER_PROCESS, str(tmp_path / "other")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "baseline"


def test_nothing_kept_or_seeded_on_the_interpreter(tmp_path):
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading")
    _fake_cache(tmp_path / "grading" / "grade-1", b"x")
    grader._keep_kernel_cache(tmp_path / "grading" / "grade-1")
    assert not list(GRADING_CACHE.root.glob("*/kernels"))
