"""Issue 16 on a GPU: a kernel that faults with an illegal address fails its grading, and the next episode grades
the baseline normally; both through the env, as an agent's episodes run. Writes JSON to --out.

    python benchmarks/fault_check.py --out fault.json

Done when: the faulting kernel's episode ends with a failed correctness gate (score 20 or less) and no exception out
of step(); the next episode's baseline scores about 220 (correct, speedup within noise of 1).
"""
import argparse
import json
import time
import traceback
from pathlib import Path

from kernelgym.env import KernelArenaEnv

ILLEGAL_ADDRESS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs + (1 << 40), x, mask=offs < n)  # far outside any allocation: an illegal address


def rmsnorm(x, weight, eps=1e-6):
    y = torch.empty_like(x)
    rmsnorm_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y
'''


def episode(env, source, label):
    t = time.monotonic()
    env.reset(seed=0)
    if source is not None:
        env.step({"kind": "write_file", "path": "kernel.py", "content": source})
    try:
        _, reward, terminated, truncated, info = env.step({"kind": "submit"})
    except Exception:  # noqa: BLE001 - what this checks is that none escapes
        return {"label": label, "exception": traceback.format_exc()}
    grade = info.get("grade", {})
    return {"label": label, "reward": reward, "terminated": terminated, "wall_s": time.monotonic() - t,
            "correct": grade.get("correct"), "speedup": grade.get("speedup"),
            "stages": grade.get("stages"), "checks": grade.get("checks")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="fault.json")
    args = ap.parse_args()
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "episodes": []}
    env = KernelArenaEnv("triton-rmsnorm", run_dir="/tmp/kg-fault")
    for label, source in (("illegal_address", ILLEGAL_ADDRESS), ("baseline_after", None),
                          ("illegal_address_again", ILLEGAL_ADDRESS), ("baseline_after_again", None)):
        result = episode(env, source, label)
        out["episodes"].append(result)
        print(json.dumps({k: v for k, v in result.items() if k != "stages"}, default=str)[:600], flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1, default=str))
    env.close()


if __name__ == "__main__":
    main()
