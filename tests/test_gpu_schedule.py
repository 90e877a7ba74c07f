"""The GPU's timing schedule (gpu_schedule.py, harness.gpu_turn): one exclusive flock per GPU, held by a harness while
it times (or observes); turns of different processes never overlap, a turn waits at most its limit and then says it
went on without the lock, and letting go releases the lock even where the candidate duplicated the descriptor."""
import fcntl
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelgym.grader import gpu_schedule, harness
from kernelgym.grader.protocol import GpuTurn, ProtocolError, parse_gpu_turn, parse_time_result


def _req(lock, wait_s=30.0):
    return SimpleNamespace(gpu_lock=str(lock) if lock else None, gpu_wait_s=wait_s)


def test_the_lock_file_is_made_once_readable_and_named_safely(tmp_path):
    path = gpu_schedule.lock_file("GPU-ab/c d", root=tmp_path)
    assert path.parent == tmp_path / gpu_schedule.LOCK_DIR and path.name == "GPU-ab_c_d.lock"
    assert path.stat().st_mode & 0o777 == 0o644
    assert gpu_schedule.lock_file("GPU-ab/c d", root=tmp_path) == path


def test_without_a_lock_file_the_block_runs_at_once_with_no_record():
    with harness.gpu_turn(_req(None)) as turn:
        assert turn is None


def test_turns_of_several_processes_never_overlap(tmp_path):
    lock = gpu_schedule.lock_file("0", root=tmp_path)
    log = tmp_path / "turns"
    pids = []
    for i in range(3):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                with harness.gpu_turn(_req(lock)) as turn:
                    start = time.monotonic()
                    time.sleep(0.15)
                    end = time.monotonic()
                with open(log, "a") as f:
                    f.write(f"{start} {end} {turn['held']}\n")
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    assert all(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) == 0 for p in pids)
    turns = sorted(tuple(line.split()) for line in log.read_text().splitlines())
    assert len(turns) == 3 and all(t[2] == "True" for t in turns)
    for (_, end, _), (start, _, _) in zip(turns, turns[1:]):
        assert float(start) >= float(end), turns


def test_a_turn_waits_for_the_holder_and_at_most_its_limit(tmp_path):
    lock = gpu_schedule.lock_file("0", root=tmp_path)
    holder = os.open(lock, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        with harness.gpu_turn(_req(lock, wait_s=0.3)) as turn:
            pass
        assert turn["held"] is False and turn["waited_s"] >= 0.3
    finally:
        os.close(holder)
    with harness.gpu_turn(_req(lock, wait_s=0.3)) as turn:
        assert turn["held"] is True and turn["waited_s"] < 0.3


def test_letting_go_releases_a_descriptor_the_candidate_duplicated(tmp_path):
    lock = gpu_schedule.lock_file("0", root=tmp_path)
    with harness.gpu_turn(_req(lock)) as turn:
        assert turn["held"]
        fds = [int(fd) for fd in os.listdir("/proc/self/fd")
               if os.path.realpath(f"/proc/self/fd/{fd}") == str(lock.resolve())]
        kept = os.dup(fds[0])  # what a candidate in the harness's process could do
    try:
        other = os.open(lock, os.O_RDONLY)
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError if the dup still held it
        finally:
            os.close(other)
    finally:
        os.close(kept)


def test_the_turn_record_is_validated_at_the_boundary():
    assert parse_gpu_turn({"held": True, "waited_s": 0.25}) == GpuTurn(True, 0.25)
    for bad in (None, [], {"held": "yes", "waited_s": 0}, {"held": True, "waited_s": float("inf")},
                {"held": True, "waited_s": -1}, {"held": True, "waited_s": True}):
        assert parse_gpu_turn(bad) is None, bad
    result = parse_time_result({"stage": "time", "configs": [], "gpu_turn": {"held": False, "waited_s": 60.0}}, 0)
    assert result.gpu_turn == GpuTurn(False, 60.0)


def test_a_request_refuses_a_lock_of_the_wrong_type(tmp_path):
    from kernelgym.discovery import get_task
    from kernelgym.grader import Grader
    from kernelgym.grader.protocol import Request
    from kernelgym.hardware import detect_profile
    grader = Grader(get_task("triton-rmsnorm"), detect_profile(), tmp_path)
    req = grader._request(grader.work_dir, 7, False).to_json()
    assert Request.from_json({**req, "gpu_lock": "/x.lock", "gpu_wait_s": 5}).gpu_lock == "/x.lock"
    with pytest.raises(ProtocolError, match="gpu_lock"):
        Request.from_json({**req, "gpu_lock": 3})


def test_the_performance_stage_says_how_the_timing_took_its_turn():
    from kernelgym.grader.gates import gpu_turn_message
    assert "holding the GPU's lock, as the harness reported (waited 0.25 s" in gpu_turn_message(GpuTurn(True, 0.25), "timed")
    msg = gpu_turn_message(GpuTurn(False, 60.0), "timed")
    assert "without a turn" in msg and "60.0 s" in msg and "gpu_wait_s" in msg


def test_the_correctness_stage_says_how_the_traced_checked_calls_took_their_turn(monkeypatch):
    # Their device times feed the speedup cross-check: a withheld speedup reads beside whether they held the GPU.
    from types import SimpleNamespace

    from kernelgym.grader.gates import correctness_gate
    from kernelgym.grader.protocol import CheckResult, ConfigRun
    session = SimpleNamespace(checked_outputs=lambda: [("outputs.pt", 0, 1)], compared=lambda *a: (True, "ok", 0.0))
    for turn, expected in [(GpuTurn(True, 0.5), "traced checked calls holding the GPU's lock"),
                           (GpuTurn(False, 60.0), "traced checked calls without a turn"), (None, None)]:
        check = CheckResult("check", True, [ConfigRun(True)], None, turn)
        stage, _ = correctness_gate(session, check, [{"n": 1}], [], "static check: passed")
        said = [m for m in stage.messages if m.startswith("GPU schedule:")]
        assert stage.passed and (said == [] if expected is None else expected in said[0]), said


def test_the_grader_names_the_lock_in_its_requests_and_binds_it_only_where_asked(tmp_path):
    from kernelgym.discovery import get_task
    from kernelgym.grader import Grader, GraderConfig
    from kernelgym.hardware import all_profiles, detect_profile
    task, h200 = get_task("triton-rmsnorm"), all_profiles()["h200"]
    on = Grader(task, h200, tmp_path / "on", GraderConfig(gpu_schedule=True, gpu_wait_s=12.5))
    req = on._request(tmp_path / "on", 3, True)
    assert req.gpu_lock and req.gpu_wait_s == 12.5
    assert os.path.dirname(req.gpu_lock).endswith(gpu_schedule.LOCK_DIR) and os.path.exists(req.gpu_lock)
    assert any(str(p) == req.gpu_lock for p in on._readonly())  # bound read-only into the candidate's sandbox
    observed = on._observer_request(tmp_path / "on", None, 3, tmp_path / "results")
    assert observed.gpu_lock == req.gpu_lock and observed.observe
    for off in (Grader(task, h200, tmp_path / "off"),  # the default
                Grader(task, detect_profile("cpu-interpreter"), tmp_path / "cpu", GraderConfig(gpu_schedule=True))):
        assert off._request(off.work_dir, 3, False).gpu_lock is None and not off._gpu_lock


def test_the_lock_path_has_no_links_so_the_harness_opens_what_the_sandbox_binds(tmp_path, monkeypatch):
    # The sandbox binds the resolved path (sandbox._Backend); the harness opens the request's path. A cache under a
    # link (~/.cache linked to scratch space) left the harness nothing to open: every turn went unscheduled.
    from kernelgym.discovery import get_task
    from kernelgym.grader import Grader, GraderConfig
    from kernelgym.hardware import all_profiles
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    path = gpu_schedule.lock_file("0", root=tmp_path / "link")
    assert path == path.resolve() and path.is_relative_to(tmp_path / "real") and path.is_file()
    monkeypatch.setenv("KERNELGYM_CACHE_DIR", str(tmp_path / "link"))
    monkeypatch.chdir(tmp_path)
    g = Grader(get_task("triton-rmsnorm"), all_profiles()["h200"], tmp_path / "work", GraderConfig(gpu_schedule=True))
    lock = g._request(g.work_dir, 3, True).gpu_lock
    assert lock == str(Path(lock).resolve()) and Path(lock).is_relative_to(tmp_path / "real")
    monkeypatch.setenv("KERNELGYM_CACHE_DIR", "relative-cache")  # a relative folder: absolute in the request
    assert gpu_schedule.lock_file("0").is_absolute()


def test_the_lock_is_readable_whatever_the_umask(tmp_path):
    # A lock made 0600 (umask 077) is handed over to the sandbox's user (sandbox.hand_over of a private read-only
    # path): the host's file then belongs to every sandbox's user.
    old = os.umask(0o077)
    try:
        path = gpu_schedule.lock_file("0", root=tmp_path)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_lock_name_taken_by_a_link_or_a_fifo_is_refused_and_never_blocks(tmp_path):
    d = tmp_path / gpu_schedule.LOCK_DIR
    d.mkdir()
    secret = tmp_path / "secret"
    secret.write_text("x")
    (d / "link.lock").symlink_to(secret)  # bound into the sandbox, it would show the target
    os.mkfifo(d / "fifo.lock")  # opened, it would block the harness (and the parent) until a writer came
    for key in ("link", "fifo"):
        with pytest.raises(OSError):
            gpu_schedule.lock_file(key, root=tmp_path)
    start = time.monotonic()
    for name in ("link.lock", "fifo.lock"):
        with harness.gpu_turn(_req(d / name, wait_s=5.0)) as turn:
            pass
        assert turn["held"] is False and "error" in turn, turn
    assert time.monotonic() - start < 2.0


def test_naming_the_gpu_never_starts_cuda(monkeypatch):
    # NVML's UUID first (no context; the same in a process forked after CUDA started), then CUDA's where it runs
    # already, then CUDA_VISIBLE_DEVICES: the trusted process never starts CUDA to name its lock.
    import torch

    def no_cuda(*_):
        raise AssertionError("CUDA started to name the GPU")
    monkeypatch.setattr(torch.cuda, "get_device_properties", no_cuda)
    monkeypatch.setattr(torch.cuda, "_lazy_init", no_cuda)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    monkeypatch.setattr(torch.cuda, "_raw_device_uuid_nvml", lambda: ["GPU-aaa", "GPU-bbb", "GPU-ccc", "GPU-ddd"])
    assert gpu_schedule.gpu_key() == "GPU-ddd"  # CUDA's device 0 is the host's GPU 3
    monkeypatch.setattr(torch.cuda, "_raw_device_uuid_nvml", lambda: None)  # no NVML
    assert gpu_schedule.gpu_key() == "3"
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: SimpleNamespace(uuid="eee"))
    assert gpu_schedule.gpu_key() == "GPU-eee"


def test_the_wait_for_a_turn_is_added_to_the_time_limit_and_an_unwritable_cache_grades_unscheduled(tmp_path,
                                                                                                 monkeypatch):
    # A candidate elsewhere may hold the lock for gpu_wait_s: that wait must not eat a correct kernel's time.
    from kernelgym.discovery import get_task
    from kernelgym.grader import Grader, GraderConfig
    from kernelgym.hardware import all_profiles
    task, h200 = get_task("triton-rmsnorm"), all_profiles()["h200"]
    plain = Grader(task, h200, tmp_path / "plain")
    scheduled = Grader(task, h200, tmp_path / "on", GraderConfig(gpu_schedule=True, gpu_wait_s=30.0))
    assert scheduled.timeout_s == plain.timeout_s + 30.0

    def unwritable(*a, **k):
        raise PermissionError("read-only cache")

    monkeypatch.setattr(gpu_schedule, "lock_file", unwritable)
    broken = Grader(task, h200, tmp_path / "ro", GraderConfig(gpu_schedule=True))
    with pytest.warns(RuntimeWarning, match="no lock file"):
        assert broken._request(broken.work_dir, 1, True).gpu_lock is None


def test_a_lock_that_could_not_be_opened_is_named_as_such():
    from kernelgym.grader.gates import gpu_turn_message
    turn = parse_gpu_turn({"held": False, "waited_s": 0.0, "error": "No such file or directory"})
    assert turn.error == "No such file or directory"
    assert "could not be taken (No such file" in gpu_turn_message(turn, "timed")
    assert "an agent's own commands do not" in gpu_turn_message(GpuTurn(True, 0.1), "timed")


def test_bench_takes_the_gradings_turns_where_the_env_schedules_them(tmp_path, monkeypatch):
    # The workspace's bench.py times on the GPU too: with GraderConfig.gpu_schedule its timed runs hold the same
    # lock as the gradings' (bench.json names it; the agent's sandbox binds it read-only); otherwise it names none.
    import gymnasium as gym

    import kernelgym.env as env_mod
    from kernelgym.discovery import get_task
    from kernelgym.estimate import bench_settings
    from kernelgym.grader import GraderConfig
    from kernelgym.hardware import all_profiles, detect_profile
    task, h200 = get_task("triton-rmsnorm"), all_profiles()["h200"]
    on = bench_settings(task, h200, GraderConfig(gpu_schedule=True, gpu_wait_s=7.0))
    assert on["gpu_lock"] == str(gpu_schedule.lock_file()) and on["gpu_wait_s"] == 7.0
    assert bench_settings(task, h200)["gpu_lock"] is None  # the default: no schedule
    assert bench_settings(task, detect_profile("cpu-interpreter"), GraderConfig(gpu_schedule=True))["gpu_lock"] is None
    bench = (Path(env_mod.__file__).parent / "workspace_tools" / "bench.py").read_text()
    assert "with harness.gpu_turn(turn):" in bench and 'SETTINGS.get("gpu_lock")' in bench
    lock = tmp_path / "gpu.lock"
    lock.write_text("")
    monkeypatch.setattr(env_mod, "scheduled_lock", lambda config, hardware: lock)
    env = gym.make("KernelArena/triton-rmsnorm-v0", run_dir=str(tmp_path / "run")).unwrapped
    try:
        env.reset(seed=0)
        assert lock.resolve() in env.sandbox.readonly
    finally:
        env.close()


# -- quiet turns: the schedule's shared side and its gate (protocol.take_turn, GraderConfig.gpu_quiet_turns) -----------
def _holding(lock, shared, started, release, records):
    """A thread holding `take_turn(lock, shared)` until `release` is set; its record in `records`."""
    import threading

    from kernelgym.grader.protocol import take_turn

    def run():
        with take_turn(str(lock), 30.0, shared) as record:
            records.append(record)
            started.set()
            release.wait(30)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_shared_work_overlaps_shared_work_but_never_a_turn(tmp_path):
    import threading

    from kernelgym.grader.protocol import take_turn
    lock = gpu_schedule.lock_file("0", root=tmp_path)
    started, release, records = threading.Event(), threading.Event(), []
    reader = _holding(lock, True, started, release, records)
    assert started.wait(10) and records[0]["held"]
    with take_turn(str(lock), 0.2, shared=True) as other:
        assert other["held"]  # shared beside shared
    with take_turn(str(lock), 0.2) as turn:
        assert not turn["held"] and turn["waited_s"] >= 0.2  # no turn while shared work runs
    release.set()
    reader.join(10)
    with take_turn(str(lock), 5.0) as turn:
        assert turn["held"]
        with take_turn(str(lock), 0.2, shared=True) as other:
            assert not other["held"]  # and no shared work during a turn


def test_a_waiting_turn_goes_before_shared_work_that_comes_after_it(tmp_path):
    # Shared work passes the gate before it takes the lock; a turn holds the gate while it waits: work that comes
    # after a waiting turn waits for it, so a stream of shared work cannot starve the turns.
    import threading

    from kernelgym.grader.protocol import take_turn
    lock = gpu_schedule.lock_file("0", root=tmp_path)
    assert os.path.isfile(lock.with_suffix(".gate"))
    started, release, records = threading.Event(), threading.Event(), []
    first = _holding(lock, True, started, release, records)
    assert started.wait(10)
    turn_started, turn_release, turn_records = threading.Event(), threading.Event(), []
    turn = _holding(lock, False, turn_started, turn_release, turn_records)
    time.sleep(0.3)  # the turn now waits, holding the gate
    assert not turn_started.is_set()
    with take_turn(str(lock), 0.3, shared=True) as late:
        assert not late["held"]  # shared work after the waiting turn does not start before it
    release.set()
    assert turn_started.wait(10) and turn_records[0]["held"]
    turn_release.set()
    first.join(10)
    turn.join(10)
    os.remove(lock.with_suffix(".gate"))  # a schedule without its gate: turns and shared work take the lock alone
    with take_turn(str(lock), 1.0) as alone:
        assert alone["held"]


def test_quiet_turns_reach_the_harness_and_the_sandbox_only_where_asked(tmp_path):
    from kernelgym.discovery import get_task
    from kernelgym.grader import Grader, GraderConfig
    from kernelgym.hardware import all_profiles
    task, h200 = get_task("triton-rmsnorm"), all_profiles()["h200"]
    quiet = Grader(task, h200, tmp_path / "q", GraderConfig(gpu_schedule=True, gpu_quiet_turns=True))
    req = quiet._request(tmp_path / "q", 3, True)
    assert req.gpu_quiet_turns and any(str(p).endswith(".gate") for p in quiet._readonly())
    plain = Grader(task, h200, tmp_path / "p", GraderConfig(gpu_schedule=True))
    assert not plain._request(tmp_path / "p", 3, True).gpu_quiet_turns
    assert not Grader(task, h200, tmp_path / "o", GraderConfig(gpu_quiet_turns=True))._request(
        tmp_path / "o", 3, True).gpu_quiet_turns  # no schedule, no quiet turns
    # The harness takes the shared side only where the request asks for quiet turns.
    lock = gpu_schedule.lock_file("0", root=tmp_path)
    with harness.gpu_turn(SimpleNamespace(gpu_lock=str(lock), gpu_wait_s=1.0, gpu_quiet_turns=False),
                          shared=True) as record:
        assert record is None
    with harness.gpu_turn(SimpleNamespace(gpu_lock=str(lock), gpu_wait_s=1.0, gpu_quiet_turns=True),
                          shared=True) as record:
        assert record["held"]


def test_the_references_draw_their_inputs_outside_the_turn_and_compute_inside_it(monkeypatch):
    # Drawing inputs is host work (matmul: about 1.7 CPU-s a set): the turn's shared side covers only the GPU's part.
    import contextlib

    from kernelgym.discovery import get_task
    from kernelgym.grader import reference as ref_mod
    task = get_task("triton-rmsnorm")
    reference, builder = ref_mod.load_reference(task)
    inside, seen = [], []

    @contextlib.contextmanager
    def turn():
        inside.append(True)
        try:
            yield
        finally:
            inside.pop()

    monkeypatch.setattr(ref_mod, "load_reference", lambda t: (
        lambda *a: seen.append(("reference", bool(inside))) or reference(*a),
        lambda *a: seen.append(("builder", bool(inside))) or builder(*a)))
    cfg = task.spec.interpreter_configs[0]
    got = ref_mod.reference_outputs(task, cfg, 5, "cpu", turn=turn)
    assert seen == [("builder", False), ("reference", True)]
    assert all(g.equal(w) for g, w in zip(got, ref_mod.reference_outputs(task, cfg, 5)))


def test_an_interrupted_wait_or_a_closed_descriptor_leaves_no_lock_held(tmp_path, monkeypatch):
    # A KeyboardInterrupt while a turn waits (the env process takes the lock too, for its whole life), and a
    # descriptor the candidate closed during its turn (EBADF on release): every lock is let go all the same.
    import threading

    from kernelgym.grader import protocol
    lock = gpu_schedule.lock_file("0", root=tmp_path)
    started, release, records = threading.Event(), threading.Event(), []
    holder = _holding(lock, True, started, release, records)
    assert started.wait(10)
    real = protocol._flock_until

    def interrupted(fd, mode, deadline):
        if mode == fcntl.LOCK_EX and fd == opened[-1]:
            raise KeyboardInterrupt
        return real(fd, mode, deadline)

    opened = []
    real_open = protocol._open_lock
    monkeypatch.setattr(protocol, "_open_lock", lambda path: opened.append(real_open(path)) or opened[-1])
    monkeypatch.setattr(protocol, "_flock_until", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with protocol.take_turn(str(lock), 5.0):
            pass  # the turn holds the gate, then is interrupted waiting for the lock
    monkeypatch.setattr(protocol, "_flock_until", real)
    release.set()
    holder.join(10)
    with protocol.take_turn(str(lock), 1.0, shared=True) as shared:
        assert shared["held"]  # the gate was not left held (shared work would not pass it)
    with protocol.take_turn(str(lock), 1.0) as turn:
        assert turn["held"]
        os.close(opened[-1])  # the gate's descriptor, closed under the turn by the candidate
    with protocol.take_turn(str(lock), 1.0, shared=True) as again:
        assert again["held"]  # neither the lock nor the gate stayed held


def test_a_gate_that_is_not_a_regular_file_is_neither_bound_nor_taken(tmp_path):
    from kernelgym.grader.protocol import take_turn
    lock = gpu_schedule.lock_file("0", root=tmp_path)
    gate = lock.with_suffix(".gate")
    assert gpu_schedule.turn_files(lock) == [lock, gate]
    os.remove(gate)
    os.symlink(tmp_path / "elsewhere", gate)  # a link: the sandbox would bind its target
    assert gpu_schedule.turn_files(lock) == [lock]
    with take_turn(str(lock), 1.0) as turn:
        assert turn["held"] and "error" not in turn  # the lock alone, as without a gate
    os.remove(gate)
    os.mkfifo(gate)
    assert gpu_schedule.turn_files(lock) == [lock]
    with take_turn(str(lock), 1.0, shared=True) as turn:
        assert turn["held"] and "error" not in turn
