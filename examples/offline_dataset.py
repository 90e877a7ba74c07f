"""Collect episodes with TrajectoryRecorder, export them with kernelgym.offline (Minari and Parquet), load them back.

    python examples/offline_dataset.py                                  # 2 episodes of triton-rmsnorm
    python examples/offline_dataset.py --episodes 4 --out /tmp/kg-offline

Each episode reads the kernel, makes one edit (a different BLOCK_SIZE per episode; the last episode breaks the
kernel so the dataset has a low reward too) and submits. The trajectories go to OUT/trajectories.jsonl; then
`kernelgym.offline.to_minari` writes the Minari dataset ``kernelgym/rmsnorm/example-v0`` under
OUT/minari (``$MINARI_DATASETS_PATH``), and the whole episodes (`read_episodes`) are written one row per step as
OUT/steps.parquet with pyarrow. Both are read back and printed. Needs ``pip install 'kernelgym[data]'``.

Without a GPU the env runs on Triton's CPU interpreter: nothing is timed, so a correct kernel scores 120
(compile +20, correct +100) and a wrong one 20; rewards in a dataset made there carry no speedup term.
"""
import argparse
import json
import os
import shutil
from pathlib import Path

import gymnasium as gym

import kernelgym  # noqa: F401 - registers the KernelArena/* envs
from kernelgym.offline import read_episodes, space_action
from kernelgym.spaces import ACTION_KINDS
from kernelgym.wrappers import TrajectoryRecorder

DATASET_ID = "kernelgym/rmsnorm/example-v0"


def collect(env, episodes):
    """Play `episodes` short scripted episodes; returns their rewards."""
    rewards = []
    for episode in range(episodes):
        env.reset(seed=episode)
        env.step({"kind": "read_file", "path": "kernel.py"})
        last = episode == episodes - 1 and episodes > 1
        edit = (("y = x * rstd * w", "y = x * rstd") if last  # a wrong kernel: the weight dropped
                else ("BLOCK_SIZE = 1024", f"BLOCK_SIZE = {512 << episode % 3}"))
        env.step({"kind": "edit_file", "path": "kernel.py", "old": edit[0], "new": edit[1]})
        _, reward, _, _, _ = env.step({"kind": "submit"})
        rewards.append(reward)
    return rewards


def to_parquet(report, path):
    """One row per step of every whole episode: episode, t, action (JSON and kind index), reward, flags, output."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    for e, ep in enumerate(report.episodes):
        for t, action in enumerate(ep.actions):
            rows.append({"episode": e, "episode_id": ep.episode_id, "t": t, "action_json": json.dumps(action),
                         "action_kind": space_action(action)["kind"], "reward": ep.rewards[t],
                         "terminated": ep.terminations[t], "truncated": ep.truncations[t],
                         "output": ep.observations[t + 1]["output"]})
    pq.write_table(pa.Table.from_pylist(rows), path)
    return pq.read_table(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=2)
    ap.add_argument("--out", default="kernelgym-runs/offline_dataset", help="run dir, trajectories and datasets")
    ap.add_argument("--task", default="KernelArena/triton-rmsnorm-v0")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    trajectories = out / "trajectories.jsonl"
    trajectories.unlink(missing_ok=True)  # a fresh log: to_minari exports every whole episode in the file

    env = TrajectoryRecorder(gym.make(args.task, run_dir=out, max_steps=5), trajectories)
    try:
        rewards = [float(r) for r in collect(env, args.episodes)]
    finally:
        env.close()
    print(f"collected {len(rewards)} episodes, rewards {rewards}; trajectories: {trajectories}")

    report = read_episodes([trajectories])
    print(f"read back {len(report.episodes)} whole episodes ({report.unfinished} unfinished, {report.failed} failed)")

    table = to_parquet(report, out / "steps.parquet")
    print(f"parquet: {out / 'steps.parquet'}: {table.num_rows} steps, columns {table.column_names}")
    final = [r for r, done in zip(table["reward"].to_pylist(), table["terminated"].to_pylist()) if done]
    print(f"parquet rewards of the last steps: {final}")

    os.environ["MINARI_DATASETS_PATH"] = str(out / "minari")
    shutil.rmtree(out / "minari", ignore_errors=True)
    import minari
    from kernelgym.offline import to_minari

    to_minari([trajectories], DATASET_ID, env_id=args.task, algorithm_name="scripted edits")
    dataset = minari.load_dataset(DATASET_ID)  # read back from disk, not the object to_minari returned
    print(f"minari: {DATASET_ID} under {out / 'minari'}: {dataset.total_episodes} episodes, {dataset.total_steps} steps")
    for episode in dataset.iterate_episodes():
        kinds = [ACTION_KINDS[int(k)] for k in episode.actions["kind"]]
        print(f"  episode {episode.id}: actions {kinds}, "
              f"final reward {float(episode.rewards[-1]):.1f}")


if __name__ == "__main__":
    main()
