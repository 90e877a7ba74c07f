"""A learner whose reward rises from the env's reward alone: REINFORCE over a factorized space of rmsnorm kernels.

    python examples/learning_loop.py                                   # 40 episodes, curve in learning_curve.png
    python examples/learning_loop.py --episodes 12 --out /tmp/curve.png --run-dir /tmp/kg-learn

CleanRL style, one file, numpy only. Each episode is one draw of the policy, a product of independent softmaxes over
three factors:

- `VARIANTS`, the kernel: the task's two-pass baseline; the tuner policy's one-pass rewrite
  (policies/tuner/rewrites/rmsnorm_one_pass.py, read from that file, not copied: a row that fits in one block is read
  once); or one of two edits of the baseline that break it (a dropped weight, a changed epsilon: it runs but is wrong).
- `BLOCKS`, BLOCK_SIZE: the two-pass kernel's block; for the one-pass kernel the longest row read in one pass, and the
  block of the two-pass loop for longer rows.
- `WARPS`, num_warps: fixed, or "auto" (one warp per 256 columns of the block, 1..16: the rewrite's own rule).

The kernel is written into the workspace's kernel.py through the env, the episode is submitted, and the grade's score
is the return. Each factor's logits take a REINFORCE step with the same advantage, the return ranked against a
running window of the last `WINDOW` returns: +1 for each it beats by more than `TIE` score points, -1 for each it
trails by more, averaged (so in [-1, 1]). Being scale-free, the 100-200 points between broken and correct kernels and
the few points between fast and slow correct ones move the policy by steps of the same size, and one broken episode
does not mute the speed differences after it, as it would with a running mean and standard deviation. The learner is
told nothing of the kernels; it learns which factors pay from the score.

Without a GPU the env runs on Triton's CPU interpreter: nothing is timed, so every correct kernel scores 120, every
broken one 20, the printed speedup is None, and the learner only learns correctness (the variant factor). On a GPU
the score is 120 + 100 x speedup over the baseline, and the same loop can also learn the faster kernel and launch
parameters (the one-pass rewrite grades about 1.11-1.13x on an H200, the best launch edit of the baseline about
1.02x), so the speedup printed per episode should rise over the run; benchmarks/gpu_issue25.sh measures whether it
does. The run is seeded (--seed): on the interpreter, grades are deterministic, so one seed gives the same curve
every time; on a GPU, timing noise (about a score point) makes runs differ.
"""
import argparse
import re
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import yaml

import kernelgym  # noqa: F401 - registers the KernelArena/* envs

KERNEL = "kernel.py"
TUNER = Path(__file__).resolve().parents[1] / "policies" / "tuner"
ONE_PASS = "rmsnorm one pass per row"  # the rewrite's name in policies/tuner/config.yaml
COLS_PER_WARP = 256  # "auto" warps: the rewrite's COLS_PER_WARP
WINDOW = 8  # returns the advantage ranks against
TIE = 1.0  # score points (0.01x of speedup): returns closer than this rank equal; about the H200's timing noise


def set_constant(src, name, value):
    """`src` with its module constant line `name = ...` set to `value`; ValueError where there is not exactly one."""
    out, n = re.subn(rf"(?m)^{name} = .+$", f"{name} = {value}", src)
    if n != 1:
        raise ValueError(f"{name}: {n} module constant lines (expected 1); has the kernel changed?")
    return out


def replace(src, old, new):
    """`src` with the text `old` replaced by `new`; ValueError where `old` is absent."""
    if old not in src:
        raise ValueError(f"{old!r} is not in the kernel; has it changed?")
    return src.replace(old, new)


def auto_warps(block):
    """The rewrite's num_warps rule: one warp per COLS_PER_WARP columns of the block, 1..16."""
    return max(1, min(16, block // COLS_PER_WARP))


def one_pass_rewrite(baseline):
    """The tuner's one-pass rewrite (a whole kernel file), read from policies/tuner/; ValueError where the baseline
    lacks a snippet the tuner requires before it applies the rewrite."""
    rw = next(r for r in yaml.safe_load((TUNER / "config.yaml").read_text())["rewrites"] if r["name"] == ONE_PASS)
    missing = [s for s in rw["requires"] if s not in baseline]
    if missing:
        raise ValueError(f"the tuner's rewrite {ONE_PASS!r} does not apply: the kernel lacks {missing}")
    return (TUNER / rw["file"]).read_text()


def two_pass(src, block, warps):
    """The baseline (or an edit of it) launched with BLOCK_SIZE `block` and num_warps `warps`."""
    src = set_constant(src, "BLOCK_SIZE", block)
    return set_constant(src, "NUM_WARPS", auto_warps(block) if warps == "auto" else warps)


def one_pass(src, block, warps):
    """The one-pass rewrite for rows of up to `block` columns (longer rows: the two-pass loop over blocks of `block`),
    with num_warps `warps` for every block size, or the rewrite's own rule for "auto"."""
    src = one_pass_rewrite(src)
    src = set_constant(src, "ONE_PASS_MAX_COLS", block)
    src = set_constant(src, "LONG_ROW_BLOCK", block)
    if warps == "auto":
        return set_constant(src, "LONG_ROW_WARPS", auto_warps(block))
    src = set_constant(src, "WARPS_BY_BLOCK", f"{{1 << k: {warps} for k in range(17)}}  # every block, up to 65536")
    return set_constant(src, "LONG_ROW_WARPS", warps)


#: (name, kernel(baseline source, block, warps), correct). The last two break the kernel on purpose.
VARIANTS = [
    ("two-pass baseline", two_pass, True),
    ("one-pass (tuner rewrite)", one_pass, True),
    ("drop the weight", lambda s, b, w: two_pass(replace(s, "y = x * rstd * w", "y = x * rstd"), b, w), False),
    ("eps + 0.5", lambda s, b, w: two_pass(replace(s, "tl.sqrt(mean_sq + eps)", "tl.sqrt(mean_sq + eps + 0.5)"),
                                           b, w), False),
]
BLOCKS = [512, 1024, 2048, 4096, 8192]
WARPS = ["auto", 2, 4, 8, 16]
FACTORS = [("variant", [v[0] for v in VARIANTS]), ("BLOCK_SIZE", BLOCKS), ("num_warps", WARPS)]


def softmax(logits):
    """The probabilities of a softmax over `logits` (a 1-d array)."""
    p = np.exp(logits - logits.max())
    return p / p.sum()


def advantage(reward, recent):
    """`reward` ranked against the returns `recent`: the mean of +1 (beaten by more than TIE), -1 (trailing by more),
    0 (within TIE); 0.0 where `recent` is empty."""
    return float(np.mean([np.sign(reward - r) if abs(reward - r) > TIE else 0.0 for r in recent])) if recent else 0.0


def play(env, choice, seed):
    """One episode: read the kernel, write the chosen kernel over it, submit. `choice` = (variant, block, warps)
    indices. Returns the score and the grade (a dict; its "speedup" is None where nothing was timed)."""
    v, b, w = choice
    obs, _ = env.reset(seed=seed)
    obs, *_ = env.step({"kind": "read_file", "path": KERNEL})
    source = VARIANTS[v][1](obs["output"], BLOCKS[b], WARPS[w])
    env.step({"kind": "write_file", "path": KERNEL, "content": source})
    obs, reward, terminated, truncated, info = env.step({"kind": "submit"})
    return reward, info["grade"]


def plot(rewards, speedups, out, title):
    """The rewards and their running mean as a PNG, and below them the measured speedups where there are any: with
    matplotlib where installed, else drawn with Pillow (rewards only)."""
    window = max(1, min(5, len(rewards)))
    smooth = np.convolve(rewards, np.ones(window) / window, mode="valid")
    try:
        import matplotlib
    except ImportError:
        return plot_with_pillow(rewards, smooth, window, out, title)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timed = [(i, s) for i, s in enumerate(speedups) if s is not None]
    fig, axes = plt.subplots(2 if timed else 1, 1, figsize=(6, 6 if timed else 3.5), sharex=True, squeeze=False)
    ax = axes[0, 0]
    x = np.arange(len(rewards))
    ax.plot(x, rewards, ".", alpha=0.5, label="episode reward")
    ax.plot(x[window - 1:], smooth, label=f"mean of {window}")
    ax.set_ylabel("arena score")
    ax.set_title(title)
    ax.legend()
    if timed:
        ax = axes[1, 0]
        ax.plot(*zip(*timed), ".", label="speedup of the episode's kernel")
        ax.axhline(1.0, color="gray", lw=0.5)
        ax.set_ylabel("speedup over the baseline (x)")
        ax.legend()
    axes[-1, 0].set_xlabel("episode")
    fig.tight_layout()
    fig.savefig(out)


def plot_with_pillow(rewards, smooth, window, out, title):
    """The rewards plot drawn with Pillow (kernelgym[data] has it), for environments without matplotlib."""
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


def mean_speedup(speedups):
    """The mean of the measured speedups, as text ("n/a" where none was measured)."""
    timed = [s for s in speedups if s is not None]
    return f"{np.mean(timed):.3f}x ({len(timed)} measured)" if timed else "n/a (none measured)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--lr", type=float, default=1.0, help="step size on the logits per unit of advantage (in [-1, 1])")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="start no episode after this many seconds (wall clock); the summary and curve still follow")
    ap.add_argument("--out", default="learning_curve.png", help="the learning curve (PNG)")
    ap.add_argument("--run-dir", default="kernelgym-runs/learning_loop")
    ap.add_argument("--task", default="KernelArena/triton-rmsnorm-v0")
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    logits = [np.zeros(len(values)) for _, values in FACTORS]
    rewards, speedups = [], []
    start = time.monotonic()
    env = gym.make(args.task, run_dir=args.run_dir, max_steps=5)
    try:
        for episode in range(args.episodes):
            if args.max_seconds is not None and time.monotonic() - start > args.max_seconds:
                print(f"stopped after {episode} episodes: --max-seconds {args.max_seconds:g} reached", flush=True)
                break
            probs = [softmax(lg) for lg in logits]
            choice = tuple(int(rng.choice(len(p), p=p)) for p in probs)
            reward, grade = play(env, choice, seed=args.seed * 1000 + episode)
            speedup = grade.get("speedup")
            adv = advantage(reward, rewards[-WINDOW:])  # the recent returns are REINFORCE's baseline
            rewards.append(reward)
            speedups.append(speedup)
            for lg, p, c in zip(logits, probs, choice):
                grad = -p  # grad of log softmax(c) = onehot(c) - p
                grad[c] += 1.0
                lg += args.lr * adv * grad
            v, b, w = choice
            p_correct = sum(p for p, (_, _, ok) in zip(probs[0], VARIANTS) if ok)
            print(f"episode {episode:3d}  {VARIANTS[v][0]:<24} BLOCK_SIZE {BLOCKS[b]:<5} num_warps {WARPS[w]!s:<4}  "
                  f"reward {reward:6.1f}  speedup {'None' if speedup is None else f'{speedup:.3f}x'}  "
                  f"p(correct variants) {p_correct:.2f}", flush=True)
    finally:
        env.close()

    k = max(1, len(rewards) // 4)
    print(f"mean reward first {k}: {np.mean(rewards[:k]):.1f}  last {k}: {np.mean(rewards[-k:]):.1f}")
    print(f"mean speedup first {k}: {mean_speedup(speedups[:k])}  last {k}: {mean_speedup(speedups[-k:])}")
    for (name, values), lg in zip(FACTORS, logits):
        print(f"final policy, {name}: " + ", ".join(f"{v} {p:.2f}" for v, p in zip(values, softmax(lg))))

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    plot(rewards, speedups, args.out, title=f"REINFORCE on {args.task.split('/')[-1]}")
    print(f"learning curve: {args.out}")


if __name__ == "__main__":
    main()
