"""Writes verl RL parquet files of kernelgym tasks: one row per task and seed, agent_name kernelgym_agent.

    python examples/verl_agent_loop/make_dataset.py --out ~/data/kernelgym --tasks triton-rmsnorm triton-softmax

Each row holds what verl's RLHFDataset reads (prompt, data_source, reward_model, extra_info) plus agent_name; the
agent loop makes the env from extra_info.task and ignores the row's prompt text (the env's reset gives the prompt).
"""
import argparse
import os

import pandas as pd


def rows(tasks, seeds):
    return [{"data_source": "kernelgym", "agent_name": "kernelgym_agent",
             "prompt": [{"role": "user", "content": f"Optimise the kernel of task {task}."}],
             "reward_model": {"style": "rule", "ground_truth": ""},  # the arena score comes from the env
             "extra_info": {"task": task, "seed": seed, "max_steps": 20}}
            for task in tasks for seed in range(seeds)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="kernelgym-runs/verl-data")
    ap.add_argument("--tasks", nargs="+", default=["triton-rmsnorm"])
    ap.add_argument("--seeds", type=int, default=8)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for split, seeds in (("train", args.seeds), ("test", 1)):
        pd.DataFrame(rows(args.tasks, seeds)).to_parquet(os.path.join(args.out, f"{split}.parquet"))
    print(f"wrote {args.out}/train.parquet and test.parquet")


if __name__ == "__main__":
    main()
