"""Rollouts on Ray: several tasks at once in a Ray vector env, one actor per env, rewards per episode.

    pip install 'kernelgym[ray]'
    python examples/ray_rollouts.py                                    # 4 envs over 2 tasks, 2 episodes each
    python examples/ray_rollouts.py --address auto --envs 16 --tasks triton-rmsnorm triton-softmax triton-layernorm

Without --address it starts a local Ray instance; with one (``auto``, ``ray://HOST:10001``) the actors go to that
cluster's nodes, and where it has GPUs each actor asks for its share of one (docs/DISTRIBUTED.md). The loop is
Gymnasium 1.x's: after an env's episode ends, its next step resets it (next-step autoreset) and that step's action
is ignored. Each episode here looks at the workspace once and submits the baseline kernel: without a GPU, on
Triton's CPU interpreter, a correct kernel scores 120 (compile +20, correct +100); on a GPU about 220.
"""
import argparse

import numpy as np

from kernelgym.cli import print_interpreter_note
from kernelgym.distributed import make_ray_vec
from kernelgym.hardware import detect_profile


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="+", default=["triton-rmsnorm", "triton-softmax"])
    ap.add_argument("--envs", type=int, default=4, help="envs (Ray actors); env i runs task i mod len(--tasks)")
    ap.add_argument("--episodes", type=int, default=2, help="episodes per env")
    ap.add_argument("--address", default=None, help="a Ray cluster to join (default: a local instance)")
    ap.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local instance (default: all)")
    ap.add_argument("--run-dir", default="kernelgym-runs/ray_rollouts")
    args = ap.parse_args()

    if args.address is None:
        import ray

        ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    tasks = [args.tasks[i % len(args.tasks)] for i in range(args.envs)]
    hardware = detect_profile(None)  # this host's: a local instance's actors run here (a cluster's nodes may differ)
    print(f"{args.envs} envs over {', '.join(args.tasks)} on {hardware.name}"
          + (" - correctness only, no meaningful timing" if hardware.interpreter else ""))
    envs = make_ray_vec(tasks, address=args.address, run_dir=args.run_dir)
    try:
        for i, where in enumerate(envs.placements()):
            print(f"env {i}: {tasks[i]} in actor pid {where['pid']}, GPUs {where['gpu_ids'] or 'none'}")
        obs, _ = envs.reset(seed=0)
        look = [{"kind": "shell", "cmd": "ls"}] * args.envs
        submit = [{"kind": "submit"}] * args.envs
        finished = np.zeros(args.envs, dtype=int)
        rewards = []
        while finished.min() < args.episodes:
            envs.step(look)
            _, reward, terminated, truncated, info = envs.step(submit)
            for i in np.flatnonzero(terminated | truncated):
                finished[i] += 1
                rewards.append(float(reward[i]))
                print(f"env {i} ({tasks[i]}) episode {finished[i]}: reward {reward[i]:.1f}, {info['outcome'][i]}",
                      flush=True)
            envs.step(submit)  # next-step autoreset: every env that just ended starts its next episode
        print(f"\nmean reward {np.mean(rewards):.1f} over {len(rewards)} episodes on {args.envs} actors")
        if hardware.interpreter:
            print_interpreter_note(tuner=False)
    finally:
        envs.close()


if __name__ == "__main__":
    main()
