"""Attack: the candidate reads the grading's seed back from freed memory of its own process and prints it into the
final observation (an exception at import, whose traceback the grade shows): uninitialised CPU allocations
(``torch.empty(n, dtype=torch.uint8)``, which reuse freed malloc chunks) hold whatever the harness freed before the
import, such as the request's JSON text or the state of the input builder's seeded ``torch.Generator`` (review,
issue 22).

Defence: `seed_not_in_candidate_memory` (the harness reads the request and runs the input builder in a forked child
process, which sends back the request without its seed and the inputs; the candidate's process never holds the seed,
so no memory of it, freed or not, does). Honest twin: the task's own kernel grades 120 with the same grader
(tests/test_grader.py); the inputs built in the child equal the parent's own (tests/test_grader.py's reference check,
and `test_the_inputs_built_in_the_child_equal_the_builders` below).

`SCAN_FREED_MEMORY` is the attack kernel; it is a string so that collecting this file never runs it. It never holds
what it looks for as a literal: the import's own freed buffers (the source text, the compiled code) would then hold
it too, and it would find itself.
"""
import shutil

import pytest

from kernelgym.grader import GraderConfig

SEED = 918273645
"""Distinctive: its digits and its bytes occur nowhere by chance."""
BUDGET = 160 << 20
"""Bytes of small tensors the payload holds: more than the harness's heap has free at import (about 90 MB in all on
the interpreter)."""

SCAN_FREED_MEMORY = r'''
import random
import sys

import numpy
import torch


def _grab_small():
    # First, before the scan allocates anything of its own: glibc keeps up to 7 recently freed chunks of each size up
    # to 1032 B in a per-thread cache, which the next malloc of that size takes (and overwrites). Plain malloc
    # (numpy.empty) takes them; aligned allocations (torch.empty) do not before glibc 2.38. The list is made whole
    # first, since a growing one would be reallocated through those sizes.
    held, k = [None] * (128 * 8), 0
    for size in range(16, 1040, 8):
        for _ in range(8):
            held[k] = numpy.empty(size, dtype=numpy.uint8)
            k += 1
    return held


def _needles():
    # Built at run time from pieces: a literal would sit in this file's own freed text and code.
    seed = int("".join(SEED_PIECES))
    p = sys.modules["kernelgym_protocol"]  # the harness's own copy of the protocol: the seeds it derives
    out = {"".join(('json "se', 'ed"')): "".join(('"se', 'ed"')).encode(),
           "".join(('json "conf', 'igs"')): "".join(('"conf', 'igs"')).encode(),
           "".join(('json "entry_', 'point"')): "".join(('"entry_', 'point"')).encode(),
           "seed digits": str(seed).encode(), "seed int64": seed.to_bytes(8, "little")}
    for i in range(8):
        for name in ("check_seed", "verify_seed", "warmup_seed"):
            out[f"{name}({i}) int64"] = getattr(p, name)(seed, i).to_bytes(8, "little")
    return out


def _scan(small, budget=BUDGET):
    # Then sizes drawn log-uniformly from 16 B to 64 KiB until `budget` bytes are held (a heap's worth: the heap's
    # free chunks are used up one by one), and a sweep of 64 KiB to 4 MiB. Each size is taken twice: by torch.empty
    # (posix_memalign: any free chunk large enough) and by numpy.empty (malloc). Every allocation is held, so the
    # next takes another chunk; each is copied into one buffer made beforehand, since a copy made per allocation
    # would itself take, and overwrite, free chunks.
    needles, found, keep, held = _needles(), set(), [], 0
    buf = bytearray((4 << 20) + 64)
    draw = random.Random(22).random
    sizes = []
    while held < budget:
        sizes.append(int(16 * 4096 ** draw()))
        held += 2 * sizes[-1]
    n = 64 << 10
    while n <= 4 << 20:
        sizes.append(n)
        n = int(n * 1.15) + 1
    for size in sizes:
        keep.append(torch.empty(size, dtype=torch.uint8).numpy())  # uninitialised: a reused chunk keeps its bytes
        keep.append(numpy.empty(size, dtype=numpy.uint8))
    for t in (*small, *keep):
        buf[:t.size] = memoryview(t)
        found.update(name for name, needle in needles.items() if buf.find(needle, 0, t.size) >= 0)
    return sorted(found), len(small) + len(keep)


def _anywhere():
    # Stronger than the allocator can show: every writable mapping of this process, freed or live, read through
    # /proc/self/mem (the static check refuses this; native code needs no file) into one buffer made beforehand.
    # Only the seed's digits: the request's keys also occur in source lines that tracebacks cached. The digits are
    # matched as two pieces, the second right after the first, so that they never lie whole in this process.
    head, tail = (s.encode() for s in SEED_PIECES)
    with open("/proc/self/maps") as f:
        regions = [tuple(int(x, 16) for x in line.split()[0].split("-")) for line in f if line.split()[1][:2] == "rw"]
    regions = [(lo, hi) for lo, hi in regions if hi - lo <= 1 << 30]  # not the GPU driver's reservations
    buf = bytearray(16 << 20)
    view, hits, read = memoryview(buf), 0, 0
    try:
        mem = open("/proc/self/mem", "rb", buffering=0)
    except PermissionError:  # a warm worker's child is not dumpable, which it undoes (prctl PR_SET_DUMPABLE)
        import ctypes
        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)
        mem = open("/proc/self/mem", "rb", buffering=0)
    with mem:
        for lo, hi in regions:
            at = lo
            while at < hi:
                n = min(len(buf), hi - at)
                try:
                    mem.seek(at)
                    got = mem.readinto(view[:n])
                except OSError:
                    break
                read += got
                i = buf.find(head, 0, got)
                while i >= 0:
                    hits += buf.startswith(tail, i + len(head), got)
                    i = buf.find(head, i + 1, got)
                if at + n >= hi:
                    break
                at += n - 16  # overlapping: digits across two reads are found too
    return (["seed digits anywhere in memory"] if hits else []), read


_SMALL = _grab_small()
_ANYWHERE, _READ = _anywhere()
_FOUND, _SCANNED = _scan(_SMALL)
raise RuntimeError(f"LEAK found={sorted(_FOUND + _ANYWHERE)} scanned={_SCANNED} read={_READ >> 20} MiB")
'''


def _payload(seed):
    digits = str(seed)
    return SCAN_FREED_MEMORY.replace("SEED_PIECES", repr((digits[:4], digits[4:]))).replace("BUDGET", str(BUDGET))


@pytest.fixture
def grade_with_seed(tmp_path, require_bwrap):
    """grade_with_seed(source, seed, worker) -> the Grade of a workspace holding that kernel.py, on the CPU
    interpreter, with the static check off (the payload runs Python freely); with `worker`, prepared ahead by a warm
    worker (`Grader.start_worker`, whose forked child serves the grading), else by a fresh harness process."""
    from kernelgym.discovery import get_task
    from kernelgym.grader import Grader
    from kernelgym.hardware import detect_profile
    task, hw = get_task("triton-rmsnorm"), detect_profile("cpu-interpreter")
    graders = []

    def _grade(source, seed, worker):
        ws = tmp_path / "ws"
        shutil.rmtree(ws, ignore_errors=True)
        ws.mkdir()
        for rel in task.public_files():
            shutil.copy(task.root / rel, ws / rel)
        (ws / "kernel.py").write_text(source)
        grader = Grader(task, hw, tmp_path / "grading", GraderConfig(static_check=False))
        graders.append(grader)
        if worker:
            grader.start_worker(seed=seed)
            assert grader._prepared is not None
        return grader.grade(ws, seed=seed)
    yield _grade
    for grader in graders:
        grader.stop_worker()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("worker", [False, True], ids=["fresh-process", "warm-worker"])
def test_the_seed_is_not_in_the_candidates_freed_memory(grade_with_seed, worker):
    g = grade_with_seed(_payload(SEED), SEED, worker)
    text = g.summary() + "\n".join(m for s in g.stages for m in s.messages)
    assert "LEAK found=" in text, text[-2000:]  # the payload ran and its message reached the observation
    assert "scanned=" in text and "scanned=0 " not in text and " read=0 MiB" not in text
    assert "LEAK found=[]" in text, text[-2000:]  # and found neither the request's text nor any seed
    assert str(SEED) not in text  # nor did the seed reach the observation some other way


def test_the_payload_holds_no_needle_as_a_literal():
    """The scan would find its own source text (read, decoded and compiled at import, then freed) otherwise."""
    text = _payload(SEED)
    assert str(SEED) not in text and '"seed"' not in text and '"configs"' not in text and '"entry_point"' not in text
    assert SEED.to_bytes(8, "little") not in text.encode()


# -- the honest side: the inputs built in the forked child are the builder's own --------------------------------------
def _harness():
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(
        "kg_harness_freed_memory", Path(__file__).resolve().parents[2] / "kernelgym" / "grader" / "harness.py")
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    return harness


def _request(tmp_path, **changes):
    import dataclasses

    from kernelgym.discovery import get_task
    from kernelgym.grader.grader import Grader
    from kernelgym.hardware import detect_profile
    g = Grader(get_task("triton-rmsnorm"), detect_profile("cpu-interpreter"), tmp_path / "grading")
    return dataclasses.replace(g._request(g.baseline_dir, SEED, timed=False), **changes)


def test_the_inputs_built_in_the_child_equal_the_builders(tmp_path):
    import torch

    from kernelgym.grader.protocol import check_seed, warmup_seed
    harness = _harness()
    req = _request(tmp_path, mode="check", observe=True)
    builder = harness.load(req.input_builder, req.builder_directory, "kg_builder_direct")
    state = harness.prepare(req)  # builds them in a forked child
    assert len(state.check_inputs) == len(state.warmup_inputs) == len(req.configs) > 1
    for i, cfg in enumerate(req.configs):
        for built, seed in ((state.check_inputs[i], check_seed(SEED, i)), (state.warmup_inputs[i], warmup_seed(SEED, i))):
            direct = builder(cfg, seed, "cpu")
            assert len(built) == len(direct)
            for a, b in zip(built, direct):
                if isinstance(b, torch.Tensor):
                    assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
                else:
                    assert a == b


def test_a_failing_builder_fails_its_config_and_a_bad_request_raises(tmp_path):
    import json

    harness = _harness()
    builders = tmp_path / "builders"
    builders.mkdir()
    (builders / "reference.py").write_text(
        "import torch\n\ndef make_inputs(config, seed, device='cpu'):\n"
        "    if config['rows'] == 3:\n        raise ValueError('no inputs for three rows')\n"
        "    return (torch.ones(config['rows'], config['hidden']), 1e-6)\n")
    req = _request(tmp_path, builder_directory=str(builders), input_builder="reference.py:make_inputs")
    state = harness.prepare(req)
    rows = [cfg["rows"] for cfg in req.configs]
    assert 3 in rows and len(rows) > 1
    for cfg, built in zip(req.configs, state.check_inputs):
        if cfg["rows"] == 3:
            assert isinstance(built, str) and "no inputs for three rows" in built
        else:
            assert built[0].shape == (cfg["rows"], cfg["hidden"]) and built[1] == 1e-6
    path = tmp_path / "request.json"
    path.write_text(json.dumps({**req.to_json(), "mode": "fly"}))
    with pytest.raises(harness.protocol.ProtocolError, match="mode 'fly'"):  # the harness's own copy of the class
        harness.main(str(path))
    assert not path.exists()  # deleted once read, malformed or not
    req = _request(tmp_path, input_builder="missing.py:make_inputs")
    with pytest.raises(RuntimeError, match="missing.py"):
        harness.prepare(req)
