"""The next episode's grading processes are started while the episode before is graded (kernelgym/env.py with
`Grader.spawn`, grader.py): the next reset takes them instead of starting Python processes, the grade is the same, and
an env closed before that reset leaves no process or folder behind. The time it saves is measured on the H200
(benchmarks/throughput.py), not here."""
import gymnasium as gym

import kernelgym  # noqa: F401 - registers the envs
from kernelgym.grader.grader import Grader


def test_the_next_reset_takes_the_processes_spawned_during_the_grading(tmp_path, require_bwrap):
    env = gym.make("KernelArena/triton-rmsnorm-v0", run_dir=tmp_path / "run", max_steps=3).unwrapped
    try:
        env.reset(seed=1)
        assert env._next_episode is None
        _, first, terminated, *_ = env.step({"kind": "submit"})
        assert terminated and first == 120.0
        episode_id, episode_dir, grader = env._next_episode
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
    env = gym.make("KernelArena/triton-rmsnorm-v0", run_dir=tmp_path / "run", max_steps=3).unwrapped
    env.reset(seed=1)
    env.step({"kind": "submit"})
    _, episode_dir, grader = env._next_episode
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
        assert terminated and reward == 120.0 and env._next_episode is None
    finally:
        env.close()
