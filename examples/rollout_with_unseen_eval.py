"""An RL-style loop: episodes of a built-in policy, each logged as a trajectory and replayed on unseen configs.

    python examples/rollout_with_unseen_eval.py --episodes 2 --run-dir /tmp/kg-example

Runs on the CPU Triton interpreter when no GPU is present (correctness only; no speedup term).
"""
import argparse
from pathlib import Path

import gymnasium as gym

import kernelgym  # noqa: F401 - registers KernelArena/* envs
from kernelgym.policy import load_policy
from kernelgym.rollout import rollout
from kernelgym.wrappers import TrajectoryRecorder, UnseenConfigEval


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--episodes", type=int, default=2)
    ap.add_argument("--run-dir", default="kernelgym-runs/example")
    args = ap.parse_args()
    run_dir = Path(args.run_dir)
    env = gym.make("KernelArena/triton-rmsnorm-v0", run_dir=run_dir, max_steps=10)
    # On the CPU interpreter the unseen configs cover small sizes and its dtypes only: allow_partial_coverage lets the
    # gate pass a kernel correct on what was covered (each result's claim says so); on a GPU every region runs.
    env = UnseenConfigEval(TrajectoryRecorder(env, run_dir / "trajectories.jsonl"), gate_reward=True,
                           allow_partial_coverage=True)
    policy = load_policy("tuner", params={"BLOCK_SIZE": [512, 2048]})  # a small grid: a quick example
    for episode in range(args.episodes):
        result = rollout(env, policy, seed=episode)
        u = result["unseen"]
        print(f"episode {episode}: reward {result['reward']:.1f} (seen score {result['grade']['score']:.1f}), "
              f"{result['steps']} steps; unseen: {u['quadrant']}, optimized kernel correct on "
              f"{u['optimized_passed']}/{u['n']} configs ({u.get('claim', u['quadrant'])})")
    env.close()
    print(f"trajectories: {run_dir / 'trajectories.jsonl'}")


if __name__ == "__main__":
    main()
