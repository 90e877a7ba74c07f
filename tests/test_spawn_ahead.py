"""The next episode's grading processes are started while the episode before is graded (kernelgym/env.py with
`Grader.spawn`, grader.py): the next reset takes them instead of starting Python processes, the grade is the same, and
an env closed before that reset leaves no process or folder behind. With prepare_ahead (opt-in), they are started at
the reset already, and after an episode begun by reset() without a seed, they prepare the next grading at its end,
for the seed the next reset() draws, while the episodes after it are spawned: the seeds are the same as without
it, and a reset(seed=...) grades with its own seed. The time it saves is measured on a GPU (benchmarks/throughput.py),
not here."""
import copy
import subprocess

import gymnasium as gym
from gymnasium.utils.seeding import np_random

import kernelgym  # noqa: F401 - registers the envs
from kernelgym.discovery import get_task
from kernelgym.env import PREPARE_AHEAD_DEPTH
from kernelgym.grader.grader import Grader
from kernelgym.hardware import detect_profile

ENV_ID = "KernelArena/triton-rmsnorm-v0"


def _next(env):
    """The next episode the env made ahead (id, folder, grader), or None."""
    return env._ahead[0] if env._ahead else None


def test_the_next_reset_takes_the_processes_spawned_during_the_grading(tmp_path, require_bwrap):
    env = gym.make(ENV_ID, run_dir=tmp_path / "run", max_steps=3, prepare_ahead=False).unwrapped
    try:
        env.reset(seed=1)
        assert not env._ahead
        _, first, terminated, *_ = env.step({"kind": "submit"})
        assert terminated and first == 120.0
        episode_id, episode_dir, grader = _next(env)
        spare = grader._spare
        assert isinstance(grader, Grader) and spare is not None and spare.worker.alive()
        assert not (episode_dir / "episode.json").exists()  # not an episode until its reset
        env.reset(seed=2)
        assert env.episode_id == episode_id and env.grader is grader and grader._spare is None
        assert grader.worker is spare.worker and grader._prepared.gdir == spare.gdir
        _, second, terminated, *_ = env.step({"kind": "submit"})
        assert terminated and second == 120.0 and grader.session.gdir == spare.gdir
        assert (episode_dir / "episode.json").is_file() and (episode_dir / "grade.json").is_file()
    finally:
        env.close()


def test_closing_before_the_next_reset_stops_the_spawned_processes(tmp_path, require_bwrap):
    env = gym.make(ENV_ID, run_dir=tmp_path / "run", max_steps=3, prepare_ahead=False).unwrapped
    env.reset(seed=1)
    env.step({"kind": "submit"})
    _, episode_dir, grader = _next(env)
    worker = grader._spare.worker
    env.close()
    worker.proc.wait(timeout=10)
    assert not worker.alive() and not episode_dir.exists()
    assert [p.name for p in (tmp_path / "run" / "episodes").iterdir()] == [env.episode_id]


def test_an_adapters_env_serves_one_episode_and_spawns_nothing(tmp_path, require_bwrap):
    """The trainer adapters make one env per episode (integrations/_common.make_env): processes spawned ahead would
    only be killed at its close."""
    from kernelgym.integrations._common import make_env
    env = make_env("triton-rmsnorm", run_dir=tmp_path / "run", max_steps=3).unwrapped
    try:
        env.reset(seed=1)
        _, reward, terminated, *_ = env.step({"kind": "submit"})
        assert terminated and reward == 120.0 and not env._ahead
    finally:
        env.close()


def _grading_seeds(env) -> list[int]:
    """The grading seeds of reset(seed=3) and three reset()s, each episode submitted at once (graded with them)."""
    seeds = []
    for seed in (3, None, None, None):
        env.reset(seed=seed)
        _, reward, terminated, *_ = env.step({"kind": "submit"})
        assert terminated and reward == 120.0 and env.grader.session.seed == env._grading_seed
        seeds.append(env._grading_seed)
    return seeds


def test_the_next_grading_is_prepared_during_the_grading_with_the_seed_reset_would_draw(tmp_path, require_bwrap,
                                                                                       monkeypatch):
    off = gym.make(ENV_ID, run_dir=tmp_path / "off", max_steps=3, prepare_ahead=False).unwrapped
    try:
        expected = _grading_seeds(off)
    finally:
        off.close()
    events = []  # the next grader's preparing starts before this grading, its observer's part after it
    for name in ("start_worker", "release_observer", "grade"):
        real = getattr(Grader, name)
        monkeypatch.setattr(Grader, name, lambda self, *a, _real=real, _name=name, **k: (
            events.append((_name, id(self), k.get("hold_observer"))), _real(self, *a, **k))[1])
    env = gym.make(ENV_ID, run_dir=tmp_path / "on", max_steps=3, prepare_ahead=True).unwrapped
    try:
        env.reset(seed=3)
        env.step({"kind": "submit"})
        assert env._next_grading_seed is None and _next(env)[2]._prepared is None  # seeded: not ahead
        env.reset()
        assert _next(env)[2]._spare is not None  # spawned at the reset, so it has imported torch by the submit
        seeds, prepared = [expected[0], env._grading_seed], None
        for _ in range(3):
            graded_by, events[:] = env.grader, []
            _, reward, terminated, *_ = env.step({"kind": "submit"})
            assert terminated and reward == 120.0 and graded_by.session.seed == seeds[-1]
            if prepared is not None:
                assert graded_by.session.gdir == prepared.gdir  # graded where it was prepared
            if len(seeds) == 4:
                break
            _, _, grader = _next(env)
            prepared, worker = grader._prepared, grader.worker
            assert prepared is not None and prepared.seed == env._next_grading_seed and worker.alive()
            own = ("release_observer", id(graded_by), None)  # the grade's own release (nothing held: a no-op)
            assert [e for e in events if e != own] == [("start_worker", id(grader), True),
                                                       ("grade", id(graded_by), None),
                                                       ("release_observer", id(grader), None)]
            # The episodes after the next are spawned at the submits before, so that each has imported torch by
            # the submit that asks it to prepare; each reset takes the first made ahead.
            assert len(env._ahead) == PREPARE_AHEAD_DEPTH
            later = env._ahead[1:]
            assert all(e[2]._spare.worker.alive() and e[2]._prepared is None for e in later)
            events[:] = []
            env.reset()
            assert env.grader is grader and grader.worker is worker and env._grading_seed == prepared.seed
            assert not any(e[0] == "start_worker" for e in events)  # prepared already: not started again
            assert env._ahead == later and _next(env)[2]._spare is not None
            seeds.append(env._grading_seed)
    finally:
        env.close()
    assert seeds == expected


def test_a_reset_with_a_seed_grades_its_own_and_close_stops_what_was_prepared(tmp_path, require_bwrap):
    env = gym.make(ENV_ID, run_dir=tmp_path / "run", max_steps=3, prepare_ahead=True).unwrapped
    try:
        env.reset(seed=3)
        env.step({"kind": "submit"})
        env.reset()
        env.step({"kind": "submit"})
        prepared_worker, prepared = _next(env)[2].worker, _next(env)[2]._prepared
        assert prepared is not None and prepared.gdir.is_dir()  # after a reset() without a seed: prepared ahead
        env.reset(seed=5)  # reseeds np_random: what was prepared for the old draw is given up, its folder too
        prepared_worker.proc.wait(timeout=10)
        assert not prepared.gdir.exists()
        rng, _ = np_random(5)
        assert env._grading_seed == int(rng.integers(0, 2**31 - 1))
        _, reward, terminated, *_ = env.step({"kind": "submit"})
        assert terminated and reward == 120.0 and env.grader.session.seed == env._grading_seed
        _, episode_dir, grader = _next(env)
        worker = grader._spare.worker
        # After a seeded reset the next episode's processes are spawned, not prepared: a caller that seeds every
        # reset would discard each preparation.
        assert worker.alive() and grader._prepared is None and env._next_grading_seed is None
        env.reset()
        assert env._grading_seed == int(rng.integers(0, 2**31 - 1))
        env.step({"kind": "submit"})
        prepared_worker, peeked = _next(env)[2].worker, env._next_grading_seed
        assert peeked == int(copy.deepcopy(rng).integers(0, 2**31 - 1))  # peeked at: np_random did not move
        env.np_random.integers(10)  # another draw before the reset (a wrapper's, say): the peek no longer holds
        rng.integers(10)
        env.reset()
        prepared_worker.proc.wait(timeout=10)  # discarded
        assert env._grading_seed == int(rng.integers(0, 2**31 - 1)) != peeked  # drawn as without prepare_ahead
        _, reward, terminated, *_ = env.step({"kind": "submit"})
        assert terminated and reward == 120.0 and env.grader.session.seed == env._grading_seed
        _, episode_dir, grader = _next(env)
        worker = grader.worker
        assert worker.alive() and grader._prepared is not None
        spawned = [(e[2]._spare.worker, e[1]) for e in env._ahead[1:]]
        assert len(spawned) == PREPARE_AHEAD_DEPTH - 1
    finally:
        env.close()
    for w, d in [(worker, episode_dir), *spawned]:  # all made ahead: stopped, their folders gone
        w.proc.wait(timeout=10)
        assert not w.alive() and not d.exists()


def test_the_observers_part_of_a_prepared_grading_waits_for_its_release(tmp_path, require_bwrap, monkeypatch):
    started = []
    monkeypatch.setattr(Grader, "observer_unavailable", lambda self: None)  # as on a GPU
    monkeypatch.setattr(Grader, "_prepare_observer", lambda self, session, observed, token, spawned=None:
                        started.append((session.seed, token, spawned)))
    grader = Grader(get_task("triton-rmsnorm"), detect_profile("cpu-interpreter"), tmp_path / "grading")
    try:
        grader.start_worker(seed=4, hold_observer=True)
        assert started == [] and grader._observer_thread is None
        grader.release_observer()
        grader._observer_thread.join()
        grader.release_observer()  # nothing held: nothing more starts
        assert [(seed, token) for seed, token, _ in started] == [(4, grader._ahead_token)]
        # Stopped while held: the observed run spawned for it is killed, and nothing starts later.
        grader.start_worker(seed=5, hold_observer=True)
        run = subprocess.Popen(["sleep", "60"], start_new_session=True)
        session, token, _ = grader._held_observer
        grader._held_observer = (session, token, type("Run", (), {"proc": run})())
        grader.stop_worker()
        assert run.wait(timeout=10) is not None and grader._held_observer is None
        grader.release_observer()
        assert len(started) == 1
    finally:
        grader.stop_worker()


def test_a_step_retried_after_its_grading_raised_keeps_the_next_episode_made(tmp_path, require_bwrap, monkeypatch):
    env = gym.make(ENV_ID, run_dir=tmp_path / "run", max_steps=3, prepare_ahead=True).unwrapped
    try:
        env.reset()
        real, calls = env._grade, []

        def grade_failing_once():
            calls.append(_next(env))
            if len(calls) == 1:
                raise RuntimeError("the grading raised")
            return real()
        monkeypatch.setattr(env, "_grade", grade_failing_once)
        try:
            env.step({"kind": "submit"})
        except RuntimeError:
            pass
        made, ahead, peeked = _next(env), list(env._ahead), env._next_grading_seed
        _, reward, terminated, *_ = env.step({"kind": "submit"})
        # Neither a second next episode (the first one's processes and folder left behind) nor a second peek, nor
        # more episodes after the next: this one's folder and those made ahead.
        assert terminated and reward == 120.0 and calls[1] is made and env._next_grading_seed == peeked
        assert len(ahead) == PREPARE_AHEAD_DEPTH and env._ahead == ahead
        assert len(list((tmp_path / "run" / "episodes").iterdir())) == 1 + PREPARE_AHEAD_DEPTH
    finally:
        env.close()


def test_an_episode_that_cannot_be_made_ahead_costs_no_grading(tmp_path, require_bwrap, monkeypatch):
    import pytest
    env = gym.make(ENV_ID, run_dir=tmp_path / "run", max_steps=3, prepare_ahead=True).unwrapped
    try:
        env.reset()
        real = env._new_episode

        def out_of_processes():
            if len(env._ahead) >= 1:
                raise OSError(11, "Resource temporarily unavailable")
            return real()
        monkeypatch.setattr(env, "_new_episode", out_of_processes)
        with pytest.warns(RuntimeWarning, match="could not be made ahead"):
            _, reward, terminated, *_ = env.step({"kind": "submit"})
        assert terminated and reward == 120.0 and (env.episode_dir / "grade.json").is_file()
        monkeypatch.setattr(env, "_new_episode", real)
        env.reset()  # takes the one made ahead, prepared; makes what is missing
        _, reward, terminated, *_ = env.step({"kind": "submit"})
        assert terminated and reward == 120.0
    finally:
        env.close()
    assert len(list((tmp_path / "run" / "episodes").iterdir())) == 2  # the two played, nothing made ahead left


def test_an_env_dropped_without_close_leaves_no_episode_made_ahead(tmp_path, require_bwrap):
    import gc
    env = gym.make(ENV_ID, run_dir=tmp_path / "run", max_steps=3, prepare_ahead=True).unwrapped
    env.reset()
    env.step({"kind": "submit"})
    workers = [e[2]._spare.worker for e in env._ahead[1:]] + [env._ahead[0][2].worker]
    assert len(env._ahead) == PREPARE_AHEAD_DEPTH
    del env
    gc.collect()
    for w in workers:
        w.proc.wait(timeout=10)
    assert len(list((tmp_path / "run" / "episodes").iterdir())) == 1  # the episode played
