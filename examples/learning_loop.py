"""A learner whose reward rises from the env's reward alone: REINFORCE over kernel edits of triton-rmsnorm.

    python examples/learning_loop.py                                   # 40 episodes, curve in learning_curve.png
    python examples/learning_loop.py --episodes 12 --out /tmp/curve.png --run-dir /tmp/kg-learn

CleanRL style, one file, numpy only. Each episode is one choice of the policy (a softmax over `ARMS`): the edit is
written into the workspace's kernel.py through the env, then the episode is submitted, and the grade's score is the
return. Some arms change launch parameters (BLOCK_SIZE, NUM_WARPS) and keep the kernel correct; others break it: a
block that is no power of two (the module imports, but Triton refuses the launch), a dropped weight or a changed
epsilon (it runs but is wrong); on the interpreter each of these scores 20 (compiles, not correct). The learner is told nothing of this; it learns to keep the kernel correct from the
score.

Without a GPU the env runs on Triton's CPU interpreter: nothing is timed, so every correct arm scores 120 and the
learner only learns correctness. On a GPU the score adds 100 x speedup over the baseline, and the same loop prefers
the faster correct launch parameters. The run is seeded (--seed): on the interpreter, grades are deterministic, so
one seed gives the same curve every time.
"""
import argparse
import re
from pathlib import Path

import gymnasium as gym
import numpy as np

import kernelgym  # noqa: F401 - registers the KernelArena/* envs

KERNEL = "kernel.py"


def set_constant(name, value):
    """An edit setting the module constant `name` (BLOCK_SIZE, NUM_WARPS) to `value`."""
    return lambda src: re.sub(rf"(?m)^{name} = \d+$", f"{name} = {value}", src)


def replace(old, new):
    """An edit replacing the text `old` by `new` in the kernel."""
    return lambda src: src.replace(old, new)


#: (name, edit of the kernel source). Launch parameters that keep it correct, and edits that break it.
ARMS = [
    ("BLOCK_SIZE=512", set_constant("BLOCK_SIZE", 512)),
    ("BLOCK_SIZE=2048", set_constant("BLOCK_SIZE", 2048)),
    ("NUM_WARPS=8", set_constant("NUM_WARPS", 8)),
    ("BLOCK_SIZE=1000 (not a power of 2)", set_constant("BLOCK_SIZE", 1000)),
    ("drop the weight", replace("y = x * rstd * w", "y = x * rstd")),
    ("eps + 0.5", replace("tl.sqrt(mean_sq + eps)", "tl.sqrt(mean_sq + eps + 0.5)")),
]


def play(env, arm, seed):
    """One episode: read the kernel, write the arm's edit of it, submit. Returns the score and the grade."""
    obs, _ = env.reset(seed=seed)
    obs, *_ = env.step({"kind": "read_file", "path": KERNEL})
    source = obs["output"]
    env.step({"kind": "write_file", "path": KERNEL, "content": ARMS[arm][1](source)})
    obs, reward, terminated, truncated, info = env.step({"kind": "submit"})
    return reward, info["grade"]


def plot(rewards, out, title):
    """The rewards and their running mean as a PNG: with matplotlib where installed, else drawn with Pillow."""
    window = max(1, min(5, len(rewards)))
    smooth = np.convolve(rewards, np.ones(window) / window, mode="valid")
    try:
        import matplotlib
    except ImportError:
        return plot_with_pillow(rewards, smooth, window, out, title)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    x = np.arange(len(rewards))
    ax.plot(x, rewards, ".", alpha=0.5, label="episode reward")
    ax.plot(x[window - 1:], smooth, label=f"mean of {window}")
    ax.set_xlabel("episode")
    ax.set_ylabel("arena score")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)


def plot_with_pillow(rewards, smooth, window, out, title):
    """The same plot drawn with Pillow (kernelgym[data] has it), for environments without matplotlib."""
    from PIL import Image, ImageDraw

    w, h, pad = 600, 350, 45
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    top = max(max(rewards), 1.0) * 1.1
    n = max(len(rewards) - 1, 1)

    def xy(i, r):
        return pad + i * (w - 2 * pad) / n, h - pad - r * (h - 2 * pad) / top

    d.rectangle([pad, pad, w - pad, h - pad], outline="black")
    for r in (0, 20, 120, 220):
        if r <= top:
            d.text((5, xy(0, r)[1] - 6), f"{r:g}", fill="black")
    for i, r in enumerate(rewards):
        x, y = xy(i, r)
        d.ellipse([x - 3, y - 3, x + 3, y + 3], fill=(31, 119, 180))
    d.line([xy(i + window - 1, r) for i, r in enumerate(smooth)], fill=(255, 127, 14), width=2)
    d.text((pad, 10), f"{title}: episode reward (dots), mean of {window} (line)", fill="black")
    d.text((w // 2 - 20, h - 25), "episode", fill="black")
    img.save(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--lr", type=float, default=0.05, help="step size on the logits (rewards are in score points)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="learning_curve.png", help="the learning curve (PNG)")
    ap.add_argument("--run-dir", default="kernelgym-runs/learning_loop")
    ap.add_argument("--task", default="KernelArena/triton-rmsnorm-v0")
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    logits = np.zeros(len(ARMS))
    baseline = None  # a running mean of the return: REINFORCE's variance reduction
    rewards = []
    env = gym.make(args.task, run_dir=args.run_dir, max_steps=5)
    try:
        for episode in range(args.episodes):
            probs = np.exp(logits - logits.max())
            probs /= probs.sum()
            arm = int(rng.choice(len(ARMS), p=probs))
            reward, grade = play(env, arm, seed=args.seed * 1000 + episode)
            rewards.append(reward)
            baseline = reward if baseline is None else 0.8 * baseline + 0.2 * reward
            # grad of log softmax(arm) = onehot(arm) - probs
            grad = -probs
            grad[arm] += 1.0
            logits += args.lr * (reward - baseline) * grad
            print(f"episode {episode:3d}  arm {ARMS[arm][0]:<36} reward {reward:6.1f}  "
                  f"p(correct arms) {probs[:3].sum():.2f}", flush=True)
    finally:
        env.close()

    k = max(1, len(rewards) // 4)
    print(f"mean reward first {k}: {np.mean(rewards[:k]):.1f}  last {k}: {np.mean(rewards[-k:]):.1f}")
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    print("final policy: " + ", ".join(f"{name} {p:.2f}" for (name, _), p in zip(ARMS, probs)))

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    plot(rewards, args.out, title=f"REINFORCE on {args.task.split('/')[-1]}")
    print(f"learning curve: {args.out}")


if __name__ == "__main__":
    main()
