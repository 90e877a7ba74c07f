"""Issue 13 on a GPU: bench.py's per-config speedups against the grader's, on the rmsnorm baseline and on the one-pass
rewrite, each benched and then graded in the same env; and bench's own time. Writes JSON to --out.

    python benchmarks/bench_agreement.py --out bench_agreement.json

Done when each config's bench speedup lies within the grader's noise band widened by 3% (docs/BENCH.md).
"""
import argparse
import json
import re
import shutil
import tempfile
import time
from pathlib import Path

from kernelgym.env import KernelArenaEnv
from kernelgym.grader import GraderConfig

REWRITE = Path(__file__).resolve().parents[1] / "policies/tuner/rewrites/rmsnorm_one_pass.py"
LINE = re.compile(r"config (\d+).*?speedup\s+([0-9.]+)x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench_agreement.json")
    ap.add_argument("--observer", default="auto")
    args = ap.parse_args()
    env = KernelArenaEnv("triton-rmsnorm", run_dir=tempfile.mkdtemp(prefix="kg-bench-"),
                         grader=GraderConfig(observer=args.observer))
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "runs": []}
    for label, source in (("baseline", None), ("one_pass_rewrite", REWRITE)):
        env.reset(seed=0)
        if source:
            shutil.copy(source, env.workspace / "kernel.py")
        t = time.monotonic()
        obs, *_ = env.step({"kind": "bench"})
        bench_s = time.monotonic() - t
        text = obs["output"] if isinstance(obs, dict) else str(obs)
        bench = {int(i): float(x) for i, x in LINE.findall(text)}
        t = time.monotonic()
        _, reward, _, _, info = env.step({"kind": "submit"})
        grade = info["grade"]
        rows = []
        for i, c in enumerate(grade["configs"]):
            band = c.get("noise_band") or [None, None]
            b = bench.get(i)
            ok = None if b is None or band[0] is None else band[0] - 0.03 <= b <= band[1] + 0.03
            rows.append({"config": c.get("config"), "bench_speedup": b, "graded_speedup": c.get("speedup"),
                         "noise_band": band, "within_band_plus_3pct": ok})
        run = {"label": label, "bench_wall_s": bench_s, "grade_wall_s": time.monotonic() - t, "reward": reward,
               "graded_speedup": grade.get("speedup"), "rows": rows, "bench_output": text}
        out["runs"].append(run)
        print(f"== {label}: bench {bench_s:.2f} s, reward {reward}, graded speedup {grade.get('speedup')}", flush=True)
        for r in rows:
            print("  ", r, flush=True)
        print(text[-3000:], flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1, default=str))
    env.close()


if __name__ == "__main__":
    main()
