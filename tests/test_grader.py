"""The grader's gates, on the CPU interpreter: 0 for no compile, 20 for wrong, 120 for the baseline."""
import json
import math
import os
import shutil
import time
from pathlib import Path

import pytest
import torch

from kernelgym.grader import Grader, GraderConfig, arena_score
from kernelgym.grader.compare import compare_outputs
from kernelgym.hardware import detect_profile
from kernelgym.discovery import get_task
from kernelgym.task import Tolerance

TASK = get_task("triton-rmsnorm")
BASELINE = (TASK.root / "kernel.py").read_text()


def workspace(tmp_path, source=None, name="ws"):
    """A workspace under `tmp_path` with the task's public files, and `source` as kernel.py when given."""
    ws = tmp_path / name
    ws.mkdir()
    for rel in TASK.public_files():
        shutil.copy(TASK.root / rel, ws / rel)
    if source is not None:
        (ws / "kernel.py").write_text(source)
    return ws


@pytest.fixture
def grade(tmp_path, require_bwrap):
    """grade(kernel_source) -> Grade for a workspace holding that kernel.py."""
    hw = detect_profile("cpu-interpreter")

    def _grade(source, extra_files=None, config=None):
        ws = tmp_path / "ws"
        shutil.rmtree(ws, ignore_errors=True)
        ws.mkdir()
        for rel in TASK.public_files():
            shutil.copy(TASK.root / rel, ws / rel)
        if source is not None:
            (ws / "kernel.py").write_text(source)
        for name, text in (extra_files or {}).items():
            (ws / name).write_text(text)
        return Grader(TASK, hw, tmp_path / "grading", config or GraderConfig()).grade(ws, seed=7)
    return _grade


def test_baseline_scores_120_on_interpreter(grade):
    g = grade(BASELINE)
    assert g.score == 120.0 and g.compiled and g.correct
    assert g.stages[2].passed is None and "not measured on the CPU interpreter" in g.stages[2].messages[0]
    assert all(c["correct"] for c in g.configs) and g.speedup is None


def test_syntax_error_scores_0(grade):
    g = grade(BASELINE.replace("def rmsnorm(", "def rmsnorm(((", 1))
    assert g.score == 0.0 and not g.compiled
    assert "SyntaxError" in "\n".join(g.stages[0].messages)


def test_wrong_output_scores_20(grade):
    g = grade(BASELINE.replace("y = x * rstd * w", "y = 2.0 * x * rstd * w"))
    assert g.score == 20.0 and g.compiled and not g.correct
    assert any("outside atol" in (c["error"] or "") for c in g.configs)


def test_crashing_kernel_fails_gate_not_env(grade):
    src = BASELINE.replace('    x2 = x.reshape(-1, x.shape[-1])', '    import os; os.abort()\n    x2 = x.reshape(-1, x.shape[-1])')
    g = grade(src)
    assert g.compiled and not g.correct and g.score == 20.0
    assert "died" in "\n".join(g.stages[1].messages)


def test_hang_is_killed(grade):
    src = BASELINE.replace('    x2 = x.reshape(-1, x.shape[-1])', '    while True: pass\n    x2 = 0')
    g = grade(src, config=GraderConfig(timeout_s=8.0))
    assert g.score == 20.0 and "limit" in "\n".join(g.stages[1].messages)


def test_symlinked_kernel_is_refused(grade, tmp_path):
    (tmp_path / "elsewhere.py").write_text(BASELINE)
    g = grade(None)
    ws = tmp_path / "ws"
    (ws / "kernel.py").unlink()
    (ws / "kernel.py").symlink_to(tmp_path / "elsewhere.py")
    g = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading2").grade(ws, seed=1)
    assert g.score == 0.0 and "symlink" in g.stages[0].messages[0]


def test_tampered_reference_in_workspace_is_ignored(grade):
    # The kernel doubles its output and the workspace's reference is edited to match: the grader uses the
    # pristine reference, so the kernel still fails.
    ref = (TASK.root / "reference.py").read_text().replace("return xf * rstd * weight.float()",
                                                           "return 2.0 * xf * rstd * weight.float()")
    g = grade(BASELINE.replace("y = x * rstd * w", "y = 2.0 * x * rstd * w"), {"reference.py": ref})
    assert g.score == 20.0


def test_kernel_cannot_read_task_dir(grade):
    src = BASELINE + f"\nopen({str(TASK.root / 'task.yaml')!r}).read()\n"
    g = grade(src)
    assert g.score == 0.0 and ("No such file" in g.stages[0].messages[0] or "FileNotFound" in g.stages[0].messages[0])


@pytest.mark.parametrize("compiled,correct,speedup,expected", [
    (False, True, 5.0, 0.0), (True, False, 5.0, 20.0), (True, True, None, 120.0), (True, True, 1.0, 220.0),
    (True, True, 2.5, 370.0)])
def test_arena_score(compiled, correct, speedup, expected):
    assert arena_score(compiled, correct, speedup) == expected


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_arena_score_rejects_bad_speedup(bad):
    with pytest.raises(ValueError, match="finite number"):
        arena_score(True, True, bad)


TOL = Tolerance(atol=1e-2, rtol=1e-2)
CFG = {"dtype": "float16"}


def test_compare_rejects_nan_shape_dtype_and_tiny_constant():
    ref = torch.randn(4, 8)
    good = ref.half()
    assert compare_outputs(good, ref, CFG, TOL)[0]
    nan = good.clone()
    nan[0, 0] = float("nan")
    assert "non-finite" in compare_outputs(nan, ref, CFG, TOL)[1]
    assert "shape" in compare_outputs(good[:2], ref, CFG, TOL)[1]
    assert "dtype" in compare_outputs(good.float(), ref, CFG, TOL)[1]
    tiny = ref * 1e-3  # true values small: zeros clear atol elementwise, but not the relative L2 check
    assert not compare_outputs(torch.zeros(4, 8, dtype=torch.float16), tiny, CFG, TOL)[0]
    assert "not a tensor" in compare_outputs([1, 2], ref, CFG, TOL)[1]


def test_compare_bounds_inf_and_non_finite_reference():
    ref = torch.randn(4, 8)
    inf = ref.half()
    inf[1, 2] = float("inf")
    assert "non-finite" in compare_outputs(inf, ref, CFG, TOL)[1]
    off = ref.half()
    off[2, 3] += 1.0  # far outside atol + rtol * |ref|
    ok, msg, err = compare_outputs(off, ref, CFG, TOL)
    assert not ok and "1/32 elements outside" in msg and "flat index 19" in msg and err == pytest.approx(1.0, abs=0.01)
    edge = ref.half().float()
    edge[0, 0] = ref[0, 0] + TOL.atol + TOL.rtol * abs(float(ref[0, 0])) * 0.5  # inside the bound: passes
    assert compare_outputs(edge.half(), ref, CFG, TOL)[0]
    ref_nan = ref.clone()
    ref_nan[0, 1] = float("nan")  # where the reference is NaN, anything goes
    assert compare_outputs(ref.half(), ref_nan, CFG, TOL)[0]
    tiny_nan = ref_nan * 1e-3  # ...but a NaN elsewhere does not switch the relative L2 check off
    assert "relative L2" in compare_outputs(torch.zeros(4, 8, dtype=torch.float16), tiny_nan, CFG, TOL)[1]
    zeros = torch.zeros(4, 8)
    assert compare_outputs(torch.full((4, 8), 1e-3, dtype=torch.float16), zeros, CFG, TOL)[0]  # within atol


# -- candidate-controlled files: the grader must neither hang, nor follow links, nor crash -----------------------

def test_untrusted_readers_refuse_links_fifos_devices_and_bombs(tmp_path):
    import os

    from kernelgym.grader.untrusted import UntrustedFileError, load_json_untrusted, load_tensors_untrusted
    (tmp_path / "secret").write_text('{"stage": "check"}')
    os.symlink(tmp_path / "secret", tmp_path / "link.json")
    os.mkfifo(tmp_path / "fifo.json")
    os.symlink("/dev/zero", tmp_path / "zero.json")
    (tmp_path / "nested.json").write_text("[" * 100000 + "]" * 100000)
    (tmp_path / "list.json").write_text("[]")
    (tmp_path / "big.json").write_text(" " * 5000)
    for name, match in [("link.json", "cannot open"), ("fifo.json", "not a regular file"),
                        ("zero.json", "cannot open"), ("nested.json", "not valid JSON"),
                        ("list.json", "expected a JSON object"), ("missing.json", "cannot open")]:
        with pytest.raises(UntrustedFileError, match=match):
            load_json_untrusted(tmp_path / name)
    with pytest.raises(UntrustedFileError, match="more than the 100 allowed"):
        load_json_untrusted(tmp_path / "big.json", max_bytes=100)
    torch.save(["not", "a", "dict"], tmp_path / "o.pt")
    with pytest.raises(UntrustedFileError, match="expected a dict"):
        load_tensors_untrusted(tmp_path / "o.pt")


@pytest.mark.timeout(300)
def test_candidate_sabotaging_its_own_result_files_scores_20(grade):
    # At import: outputs.pt made a symlink to a host file and torch.save patched to write garbage.
    src = BASELINE + '''
import os as _os, torch as _torch
_d = _os.path.dirname(_os.path.abspath(__file__))
_torch.save = lambda obj, path, *a, **k: open(path, "w").write("[]")
'''
    g = grade(src)
    assert g.compiled and not g.correct and g.score == 20.0
    assert "unreadable" in "\n".join(g.stages[1].messages)


@pytest.mark.timeout(300)
def test_candidate_making_result_a_fifo_does_not_hang(grade):
    src = BASELINE + '''
import os as _os
_d = _os.path.dirname(_os.path.abspath(__file__))
_os.mkfifo(_os.path.join(_d, "check_result.json"))
'''
    g = grade(src, config=GraderConfig(timeout_s=15.0))
    assert g.score <= 20.0 and not g.correct


def test_exotic_output_tensor_fails_cleanly():
    meta = torch.empty(4, 8, device="meta", dtype=torch.float16)
    ok, msg, _ = compare_outputs(meta, torch.randn(4, 8), CFG, TOL)
    assert not ok and "dense real tensor" in msg
    sparse = torch.randn(4, 8).half().to_sparse()
    assert not compare_outputs(sparse, torch.randn(4, 8), CFG, TOL)[0]


def test_directory_and_zip_bomb_results_are_refused(tmp_path):
    import zipfile

    from kernelgym.grader.untrusted import UntrustedFileError, load_json_untrusted, load_tensors_untrusted
    (tmp_path / "check_result.json").mkdir()
    with pytest.raises(UntrustedFileError, match="not a regular file"):
        load_json_untrusted(tmp_path / "check_result.json")
    with zipfile.ZipFile(tmp_path / "bomb.pt", "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data/0", b"\0" * (64 << 20))  # 64 MB of zeros, ~64 KB on disk
    assert (tmp_path / "bomb.pt").stat().st_size < 1 << 20
    with pytest.raises(UntrustedFileError, match="unpacks to"):
        load_tensors_untrusted(tmp_path / "bomb.pt", max_unpacked_bytes=8 << 20)


def test_grading_dir_writes_never_follow_planted_links(tmp_path):
    from kernelgym.grader.files import write_new as _write_new
    target = tmp_path / "host_file"
    (tmp_path / "gdir").mkdir()
    (tmp_path / "gdir" / "kernel.py").symlink_to(target)
    with pytest.raises(FileExistsError):
        _write_new(tmp_path / "gdir" / "kernel.py", b"payload")
    assert not target.exists()


@pytest.mark.timeout(180)
def test_flooding_the_worker_pipe_cannot_hang_the_env(tmp_path, require_bwrap):
    # The candidate reaches the worker's stdout through bwrap's pid 1 and writes without a newline, forever.
    src = BASELINE + '''
import threading as _t
def _flood():
    with open("/proc/1/fd/1", "w") as f:
        while True:
            f.write("x" * 65536)
            f.flush()
_t.Thread(target=_flood, daemon=True).start()
'''
    ws = workspace(tmp_path, src)
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(timeout_s=20.0))
    grader.start_worker(seed=0)  # the prepared path, as the env uses it
    g = grader.grade(ws, seed=0)
    assert g.elapsed_s < 60 and g.score <= 120.0


def test_pytorch_fallback_without_a_triton_launch_fails(grade):
    # The Triton kernel is defined but never launched; PyTorch does the work.
    src = BASELINE.replace('''    rmsnorm_kernel[(n_rows,)](''', '''    y = (x2.float() * torch.rsqrt(x2.float().pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
    return y.reshape(x.shape)
    rmsnorm_kernel[(n_rows,)](''')
    g = grade(src)
    assert g.compiled and not g.correct and g.score == 20.0
    assert "no Triton kernel" in "\n".join(g.stages[1].messages)


@pytest.mark.timeout(300)
def test_prepared_grading_matches_a_cold_one(tmp_path, require_bwrap):
    ws = workspace(tmp_path)
    hw = detect_profile("cpu-interpreter")
    cold = Grader(TASK, hw, tmp_path / "cold", GraderConfig(warm_worker=False)).grade(ws, seed=11)
    grader = Grader(TASK, hw, tmp_path / "warm")
    grader.start_worker(seed=11)
    prepared_dir = grader._prepared.gdir
    warm = grader.grade(ws, seed=11)
    assert "[harness] prepared" in (prepared_dir / "harness.log").read_text()
    assert (prepared_dir / "kernel.py").read_text() == (ws / "kernel.py").read_text()  # graded where prepared
    assert warm.score == cold.score == 120.0
    assert [c["max_abs_err"] for c in warm.configs] == [c["max_abs_err"] for c in cold.configs]
    # Prepared for another seed: still graded, on the seed asked for.
    grader.start_worker(seed=12)
    other = grader.grade(ws, seed=11)
    assert [c["max_abs_err"] for c in other.configs] == [c["max_abs_err"] for c in cold.configs]


# -- found by an adversarial review: the grading directory, nested errors, unreadable or huge kernel files ---------

SWAP_GRADING_DIR = BASELINE + '''
import os as _os
_g = _os.path.dirname(_os.path.abspath(__file__))
try:
    _os.rename(_g, _g + ".moved")
    _os.symlink("/", _g)
except OSError as _e:
    print("swap refused:", _e)
'''


@pytest.mark.parametrize("prepared", [True, False])
def test_candidate_cannot_rename_or_replace_its_grading_dir(tmp_path, require_bwrap, prepared):
    ws = workspace(tmp_path, SWAP_GRADING_DIR)
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(warm_worker=prepared))
    if prepared:
        grader.start_worker(seed=3)
    g = grader.grade(ws, seed=3)
    dirs = list((tmp_path / "grading").glob("grade-*"))
    assert all(d.is_dir() and not d.is_symlink() for d in dirs) and not any(d.name.endswith(".moved") for d in dirs)
    assert g.score == 120.0  # graded as the baseline it is; the swap was refused (the dir is a mount point)


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


def test_huge_or_special_kernel_files_are_problems_not_crashes(grade, tmp_path):
    ws = workspace(tmp_path, name="ws-huge")
    with open(ws / "kernel.py", "wb") as f:
        f.truncate(64 << 20)  # sparse: nearly no disk, 64 MiB to read
    g = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading-huge").grade(ws, seed=1)
    assert g.score == 0.0 and "allowed" in "\n".join(g.stages[0].messages)


def test_input_builder_is_loaded_from_the_pristine_copy(tmp_path, require_bwrap, monkeypatch):
    # A grading directory whose reference.py makes other inputs: the harness must not use it.
    import kernelgym.grader.grader as grader_module
    real = grader_module.copy_public

    def tampered(task, dest):
        real(task, dest)
        if dest.name.startswith("grade-"):
            (dest / "reference.py").write_text((TASK.root / "reference.py").read_text().replace(
                "x = torch.randn(", "x = 0 * torch.randn("))
    monkeypatch.setattr(grader_module, "copy_public", tampered)
    ws = workspace(tmp_path)
    g = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(warm_worker=False)).grade(ws, 2)
    assert g.score == 120.0, g.summary()


def test_a_grader_dropped_without_stop_leaves_no_worker(tmp_path, require_bwrap):
    import gc
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading")
    grader.start_worker(seed=1)
    proc = grader.worker.proc
    assert proc.poll() is None
    grader._prepared.references.wait()  # the reference thread is done (seconds)
    del grader
    gc.collect()
    assert proc.poll() is not None  # killed and reaped by the worker's finalizer


RUN_ONCE_THEN_VANISH = BASELINE + '''
import os as _os
_d = _os.path.dirname(_os.path.abspath(__file__))
with open(_os.path.join(_d, "runs.txt"), "a") as _f:
    _f.write("run\\n")
try:  # a forged "unprepared" reply, in the format the worker uses, without the token
    with open("/proc/1/fd/1", "w") as _o:
        _o.write("unprepared 1 0 " + _os.path.join(_d, "request.json") + "\\n")
except OSError:
    pass
_os.unlink(_os.path.join(_d, "harness.log"))
_os._exit(1)
'''


def test_a_candidate_gets_no_second_run(tmp_path, require_bwrap):
    # Deleting its log, exiting early and forging the worker's reply used to buy a second run in a fresh process.
    ws = workspace(tmp_path, RUN_ONCE_THEN_VANISH)
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading")
    grader.start_worker(seed=4)
    gdir = grader._prepared.gdir
    g = grader.grade(ws, seed=4)
    assert (gdir / "runs.txt").read_text() == "run\n"
    assert g.score == 0.0


STEAL_THE_REPLY = """
import os as _os, time as _time
_D = _os.path.dirname(_os.path.abspath(__file__))
with open(_os.path.join(_D, "runs.txt"), "a") as _f:
    _f.write("run\\n")
for _k in range(4):  # leftover readers on the worker's reply pipe, forging 'unprepared' with the stolen token
    if _os.fork() == 0:
        if _os.fork() == 0:
            _os.setsid()
            _r, _buf = _os.open("/proc/1/fd/1", _os.O_RDONLY), b""
            while True:
                _c = _os.read(_r, 65536)
                if not _c:
                    _os._exit(0)
                _buf += _c
                _p = _buf.split(b"\\n")[0].split(b" ", 3)
                if len(_p) == 4 and _p[0] == b"done":
                    _w = _os.open("/proc/1/fd/1", _os.O_WRONLY)
                    for _ in range(100):
                        _os.write(_w, b"unprepared " + _p[1] + b" " + _p[2] + b" " + _p[3] + b"\\n")
                        _time.sleep(0.002)
                    _os._exit(0)
        _os._exit(0)
    _os.wait()
""" + BASELINE


@pytest.mark.timeout(300)
def test_leftover_processes_cannot_steal_or_forge_the_workers_reply(tmp_path, require_bwrap):
    ws = workspace(tmp_path, STEAL_THE_REPLY)
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(timeout_s=60.0))
    grader.start_worker(seed=5)
    gdir = grader._prepared.gdir
    g = grader.grade(ws, seed=5)
    assert (gdir / "runs.txt").read_text() == "run\n"  # one run: no forged 'unprepared' was taken
    assert g.score == 120.0 and g.elapsed_s < 50  # graded as the baseline it is, without waiting for a timeout


SLOW_EXIT = BASELINE + '''
import os as _os, time as _time
_real_exit = _os._exit
_os._exit = lambda code: (_time.sleep(60), _real_exit(code))  # the process lingers after its results are written
'''


@pytest.mark.timeout(120)
def test_the_prepared_worker_answers_when_the_results_are_written_not_at_exit(tmp_path, require_bwrap):
    # A CUDA process takes hundreds of ms to exit; the reward must not wait for that (here: a 60 s exit).
    ws = workspace(tmp_path, SLOW_EXIT)
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(timeout_s=40.0))
    grader.start_worker(seed=6)
    g = grader.grade(ws, seed=6)
    assert g.score == 120.0 and g.elapsed_s < 30, g.summary()


def test_a_prepared_reference_compares_exactly_as_the_plain_one():
    from kernelgym.grader.compare import prepare_reference
    ref = torch.randn(16, 32)
    off = ref.half()
    off[3, 4] += 1.0
    nan = ref.half()
    nan[0, 0] = float("nan")
    for out in (ref.half(), off, nan, torch.zeros(16, 32, dtype=torch.float16), ref.half()[:2], ref.float()):
        assert compare_outputs(out, prepare_reference(ref, TOL), CFG, TOL) == compare_outputs(out, ref, CFG, TOL)


FAKE_WORKER = r"""
import sys
cmd, token, path = sys.stdin.readline().rstrip("\n").split(" ", 2)
print("unprepared 0 %s %s" % (token, path) if sys.argv[1] == "unprepared" else "started %s %s" % (token, path), flush=True)
if sys.argv[1] == "unprepared":
    sys.exit()
go = sys.stdin.readline().split()
assert go == ["go", token], go
print("unprepared 0 %s %s" % (token, path), flush=True)  # after 'started': must be ignored
print("X y done 3 %s %s" % (token, path), flush=True)  # junk a candidate put before the reply (no newline)
sys.stdin.readline()
"""


@pytest.mark.parametrize("behaviour,expected", [("started", (3, False, False)), ("unprepared", (0, False, True))])
def test_the_worker_reply_protocol(tmp_path, behaviour, expected):
    # 'unprepared' (a retry in a fresh process) is taken only before the worker said 'started', which it says
    # before any candidate code runs and which we acknowledge with 'go TOKEN'.
    import subprocess
    import sys

    from kernelgym.grader.worker import GraderWorker
    worker = GraderWorker.__new__(GraderWorker)
    worker.proc = subprocess.Popen([sys.executable, "-c", FAKE_WORKER, behaviour], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
    try:
        assert worker.request(tmp_path / "a dir" / "request.json", timeout_s=30) == expected
    finally:
        worker.proc.kill()
        worker.proc.wait()


def _processes_mentioning(text):
    pids = []
    for d in os.listdir("/proc"):
        try:
            if d.isdigit() and text in open(f"/proc/{d}/cmdline").read():
                pids.append(int(d))
        except OSError:
            pass
    return pids


HIJACK_PID1 = (Path(__file__).parent / "attacks" / "hijack_pid1.py").read_text()


def _without_seccomp(monkeypatch):
    """Sandboxes started from here on run without the seccomp filter and with pid 1's memory unmasked, which
    refuse the hijack's ptrace and its writes to /proc/1/mem (tests/test_sandbox.py): the hijack tests test the
    second defence, the kill of the sandbox's pid 1 by pidfd."""
    from kernelgym import sandbox, seccomp
    monkeypatch.setattr(seccomp, "program_fd", lambda: None)
    monkeypatch.setattr(sandbox, "PID1_MEMORY_MASK", [])


def _assert_nothing_outlives(run, directory):
    """Call `run`, in which the hijack attack runs from `directory`; then no process may still mention it."""
    try:
        run()
        log = (directory / "hijack.log").read_text() if (directory / "hijack.log").exists() else ""
        if "execve injected" not in log:
            pytest.skip(f"the attack could not run here (ptrace of an ancestor refused?): {log[-300:]}")
        deadline = time.monotonic() + 10
        while _processes_mentioning(str(directory)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _processes_mentioning(str(directory)), f"a process from {directory} outlived its sandbox"
    finally:
        for pid in _processes_mentioning(str(directory)):
            os.kill(pid, 9)


@pytest.mark.timeout(180)
def test_a_hijacked_sandbox_init_does_not_outlive_the_grading(tmp_path, require_bwrap, monkeypatch):
    ws = workspace(tmp_path, HIJACK_PID1 + "\n" + BASELINE)
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(timeout_s=60.0))
    _without_seccomp(monkeypatch)
    grader.start_worker(seed=7)
    _assert_nothing_outlives(lambda: grader.grade(ws, seed=7), grader._prepared.gdir)


@pytest.mark.timeout(120)
def test_a_hijacked_sandbox_init_does_not_outlive_a_shell_command(tmp_path, require_bwrap, monkeypatch):
    import sys

    from kernelgym.sandbox import BubblewrapSandbox, Limits
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "attack.py").write_text(HIJACK_PID1)
    _without_seccomp(monkeypatch)
    _assert_nothing_outlives(
        lambda: BubblewrapSandbox(ws).run(f"{sys.executable} attack.py; sleep 100", limits=Limits(timeout_s=30)), ws)


def test_outputs_written_by_the_candidate_before_the_harness_are_not_graded(grade):
    # tests/attacks/forged_outputs_early.py: returns zeros, but at import saves the right answers as outputs.pt,
    # which the parent's early comparison used to read and keep; the harness's own outputs.pt came later.
    g = grade((Path(__file__).parent / "attacks" / "forged_outputs_early.py").read_text())
    assert g.compiled and not g.correct and g.score == 20, g.summary()


@pytest.mark.timeout(240)
def test_a_run_queued_in_the_workers_stdin_is_never_served(tmp_path, require_bwrap):
    # tests/attacks/second_run.py writes "run ... request.json" into the worker's stdin through /proc/1/fd/0 and
    # puts an 'X' in front of the worker's reply; the worker used to serve that run after answering, in a fork
    # whose memory still held the token, so the second run could forge the reply. Now the reply is still read
    # and the worker exits after its one run.
    ws = workspace(tmp_path, (Path(__file__).parent / "attacks" / "second_run.py").read_text() + "\n" + BASELINE)
    grader = Grader(TASK, detect_profile("cpu-interpreter"), tmp_path / "grading", GraderConfig(timeout_s=60.0))
    grader.start_worker(seed=5)
    gdir = grader._prepared.gdir
    t = time.monotonic()
    g = grader.grade(ws, seed=5)
    assert g.score == 120.0 and time.monotonic() - t < 30, g.summary()  # the spoiled reply was still taken
    time.sleep(2)
    runs = (gdir / "runs.txt").read_text()
    assert runs.count("imported") == 1, runs


def test_an_editable_file_under_a_symlinked_directory_is_not_copied(tmp_path):
    # Only the last component used to be checked: a symlinked directory on the way let the trusted parent copy a
    # host file of that name into the grading directory (a task may have editable files in subdirectories).
    from kernelgym.grader.grader import copy_editable
    secret = tmp_path / "host"
    secret.mkdir()
    (secret / "kernel.py").write_text("HOST SECRET")
    ws, dest = tmp_path / "ws", tmp_path / "dest"
    ws.mkdir()
    dest.mkdir()
    (ws / "sub").symlink_to(secret)
    task = type("T", (), {"spec": type("S", (), {"editable_files": ["sub/kernel.py"]})()})()
    problems = copy_editable(task, ws, dest)
    assert problems and "symlink" in problems[0] and not (dest / "sub" / "kernel.py").exists()
    (ws / "sub").unlink()
    (ws / "sub").mkdir()
    (ws / "sub" / "kernel.py").write_text("mine")
    (dest / "sub").mkdir()
    assert copy_editable(task, ws, dest) == [] and (dest / "sub" / "kernel.py").read_text() == "mine"


def test_a_tensor_subclass_output_fails_the_check(grade):
    # A subclass could compute lazily, in __torch_function__ when compared or copied out, outside the timed window.
    src = BASELINE.replace("def rmsnorm(", "def _rmsnorm(") + '''

class Lazy(torch.Tensor):
    pass


def rmsnorm(x, weight, eps=1e-6):
    return _rmsnorm(x, weight, eps).as_subclass(Lazy)
'''
    g = grade(src)
    assert g.compiled and not g.correct and "not a subclass" in "\n".join(g.stages[1].messages), g.summary()


def test_a_torch_function_mode_left_active_fails_the_check(grade):
    # A mode entered at import could fill a returned plain tensor when the harness copies it out (a review's
    # attack: zeros returned, the right values written in at .detach()).
    src = BASELINE + '''

class _Mode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


_Mode().__enter__()
'''
    g = grade(src)
    assert g.compiled and not g.correct and "mode is active" in "\n".join(g.stages[1].messages), g.summary()
