"""Several tasks, seeded resets, random valid actions, then submit: the rewards as a table.

    python examples/multi_task_loop.py                                  # 3 easy Triton tasks x seeds 0 and 1
    python examples/multi_task_loop.py --tasks triton-rmsnorm triton-softmax --seeds 0 --steps 3

Each episode resets the task with its seed, takes --steps actions drawn at random (seeded) from valid ones (read
the kernel, list the workspace, run check.py, ask bench for its advisory estimate) and submits; the table has one
row per episode. Actions only look, so every kernel is the baseline and the rewards show the tasks' baselines
grading: without a GPU, on Triton's CPU interpreter, nothing is timed and a correct kernel scores 120 (compile +20,
correct +100); on a GPU it adds 100 x speedup (about 220 for a baseline).
"""
import argparse
import random

import gymnasium as gym

import kernelgym


def random_action(rng, kernel_file):
    """One valid action that leaves the kernel as it is."""
    return rng.choice([
        {"kind": "read_file", "path": kernel_file},
        {"kind": "shell", "cmd": "ls"},
        {"kind": "shell", "cmd": "python check.py"},
        {"kind": "bench"},
    ])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="*", help="task names or env ids (default: the first --n-tasks easy Triton "
                                               "tasks this machine can grade)")
    ap.add_argument("--n-tasks", type=int, default=3)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--steps", type=int, default=2, help="random actions before the submit")
    ap.add_argument("--run-dir", default="kernelgym-runs/multi_task_loop")
    args = ap.parse_args()

    if args.tasks:
        tasks = args.tasks
    else:
        from kernelgym.hardware import detect_profile

        tasks = [t.env_id for t in kernelgym.list_tasks(language="triton", difficulty="easy",
                                                         hardware=detect_profile().id)][:args.n_tasks]
    rows = []
    for task in tasks:
        env = gym.make(task if task.startswith("KernelArena/") else kernelgym.get_task(task).env_id,
                       run_dir=args.run_dir, max_steps=args.steps + 1)
        kernel_file = env.unwrapped.task.spec.entry_point.split(":")[0]
        try:
            for seed in args.seeds:
                rng = random.Random(seed)
                env.reset(seed=seed)
                kinds = []
                for _ in range(args.steps):
                    action = random_action(rng, kernel_file)
                    kinds.append(action.get("cmd", action["kind"]))
                    env.step(action)
                _, reward, terminated, truncated, info = env.step({"kind": "submit"})
                g = info["grade"]
                rows.append((env.unwrapped.task.name, seed, ", ".join(kinds), reward, g["compiled"], g["correct"],
                             g["hardware"]))
                print(f"{rows[-1][0]} seed {seed}: reward {reward:.1f}", flush=True)
        finally:
            env.close()

    header = ("task", "seed", "actions", "reward", "compiled", "correct", "hardware")
    table = [header] + [(r[0], str(r[1]), r[2], f"{r[3]:.1f}", str(r[4]), str(r[5]), r[6]) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    print()
    for i, row in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print(f"\nmean reward {sum(r[3] for r in rows) / len(rows):.1f} over {len(rows)} episodes")


if __name__ == "__main__":
    main()
