"""Unseen-config evaluation, online and offline: episodes of a built-in policy, each logged as a trajectory and
replayed on input configs the agent never saw (`UnseenConfigEval`), then the finished run replayed as a whole
(`kernelgym.unseen.replay.replay_run`, what `kernelgym unseen RUN_DIR` does).

    python examples/unseen_eval.py --episodes 2 --run-dir /tmp/kg-example
    python examples/unseen_eval.py --replay-only /tmp/kg-example     # a run that has finished already

Runs on Triton's CPU interpreter when no GPU is present: correctness only, nothing is timed (no speedup term, best
score 120), and the unseen configs cover small sizes and the interpreter's dtypes only (each result's claim says
so). On a GPU every region of the config space runs and the unseen speedup is measured.
"""
import argparse
from pathlib import Path

import gymnasium as gym

import kernelgym  # noqa: F401 - registers KernelArena/* envs
from kernelgym.policy import load_policy
from kernelgym.rollout import rollout
from kernelgym.unseen.replay import replay_run
from kernelgym.wrappers import TrajectoryRecorder, UnseenConfigEval


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=2)
    ap.add_argument("--run-dir", default="kernelgym-runs/unseen_eval")
    ap.add_argument("--policy", default="tuner", help="a built-in policy: tuner (searches BLOCK_SIZE on a small grid) "
                                                      "or scripted (reads, checks, submits: quicker)")
    ap.add_argument("--replay-only", metavar="RUN_DIR", help="only replay this finished run on unseen configs")
    args = ap.parse_args()
    if args.replay_only:
        return replay(Path(args.replay_only))
    run_dir = Path(args.run_dir)
    env = gym.make("KernelArena/triton-rmsnorm-v0", run_dir=run_dir, max_steps=10)
    # On the CPU interpreter the unseen configs cover small sizes and its dtypes only: allow_partial_coverage lets the
    # gate pass a kernel correct on what was covered (each result's claim says so); on a GPU every region runs.
    env = UnseenConfigEval(TrajectoryRecorder(env, run_dir / "trajectories.jsonl"), gate_reward=True,
                           allow_partial_coverage=True)
    policy = (load_policy("tuner", params={"BLOCK_SIZE": [512, 2048]}) if args.policy == "tuner"  # a small grid
              else load_policy(args.policy))
    for episode in range(args.episodes):
        result = rollout(env, policy, seed=episode)
        u = result["unseen"]
        print(f"episode {episode}: reward {result['reward']:.1f} (seen score {result['grade']['score']:.1f}), "
              f"{result['steps']} steps; unseen: {u['quadrant']}, optimized kernel correct on "
              f"{u['optimized_passed']}/{u['n']} configs ({u.get('claim', u['quadrant'])})")
    env.close()
    print(f"trajectories: {run_dir / 'trajectories.jsonl'}")
    replay(run_dir)


def replay(run_dir):
    """Replay every graded episode of `run_dir` on a set of private unseen configs and print the summary."""
    summary = replay_run(run_dir, seed=1)  # another set than the online evaluation's
    quadrants = ", ".join(f"{q} {n}" for q, n in summary["quadrants"].items() if n)
    print(f"replayed {summary['episodes']} episodes of {run_dir}: {quadrants}; conditional correctness "
          f"{summary['conditional_correctness']}; summary: {run_dir / 'unseen_summary.json'}")


if __name__ == "__main__":
    main()
