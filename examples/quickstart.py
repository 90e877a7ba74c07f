"""Quickstart: make an env, play one episode (read the kernel, edit it, submit) and print the grade.

    python examples/quickstart.py                          # triton-rmsnorm, seed 0
    python examples/quickstart.py --task KernelArena/triton-softmax-v0 --run-dir /tmp/kg-quickstart

Without a GPU the kernel runs on Triton's CPU interpreter: it is compiled and checked for correctness, nothing is
timed, so the best score is 120 (compile +20, correct +100) with no speedup term. On a GPU the score adds
100 x speedup over the baseline.
"""
import argparse

import gymnasium as gym

import kernelgym  # noqa: F401 - registers the KernelArena/* envs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="KernelArena/triton-rmsnorm-v0", help="env id")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--run-dir", default="kernelgym-runs/quickstart", help="where the episode's workspace lives")
    args = ap.parse_args()

    env = gym.make(args.task, run_dir=args.run_dir, max_steps=5)
    obs, info = env.reset(seed=args.seed)
    print(obs["prompt"][:400], "...\n")

    # Read the kernel: the observation's "output" is the file's text.
    kernel_file = env.unwrapped.task.spec.entry_point.split(":")[0]
    obs, reward, terminated, truncated, info = env.step({"kind": "read_file", "path": kernel_file})
    print(f"{kernel_file}: {len(obs['output'].splitlines())} lines")

    # An edit that keeps rmsnorm correct (a bigger block); other tasks are submitted as they are.
    if "BLOCK_SIZE = 1024" in obs["output"]:
        obs, reward, terminated, truncated, info = env.step(
            {"kind": "edit_file", "path": kernel_file, "old": "BLOCK_SIZE = 1024", "new": "BLOCK_SIZE = 2048"})
        print(obs["output"].strip())

    obs, reward, terminated, truncated, info = env.step({"kind": "submit"})
    grade = info["grade"]
    print(f"reward {reward:.1f} on {grade['hardware']} (terminated={terminated})")
    for stage in grade["stages"]:  # compile -> correctness -> performance; passed is None where not run
        print(f"  {stage['name']}: {stage['passed']}: {stage['messages'][0]}")
    print(f"compiled={grade['compiled']} correct={grade['correct']} speedup={grade['speedup']}")
    env.close()


if __name__ == "__main__":
    main()
