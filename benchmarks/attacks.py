"""Kernel-only attacks on the timing, graded on a GPU (no harness patching): what the timing defences make of them
(with the static provenance check off, which refuses both kernels' source before timing by default).

- ``attack_fingerprint.py``: computes only on the inputs it saw first (the verification set); must fail: every
  timed run of the candidate is checked against the baseline's output on the same inputs.
- ``attack_untimed_tail.py``: the baseline, captured so that the graph's end event does not wait for the kernel;
  must be timed by the events around each call (speedup about 1), not by its in-graph events.

    python benchmarks/attacks.py --out attacks.json
"""
import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile
from kernelgym.discovery import get_task

HERE = Path(__file__).resolve().parent


def grade(task, hw, source):
    ws = Path(tempfile.mkdtemp(prefix="kg-attack-"))
    for rel in task.public_files():
        shutil.copy(task.root / rel, ws / rel)
    (ws / "kernel.py").write_text(source)
    # The static provenance check refuses these kernels' source (torch.cuda calls on the entry path) before any
    # timing; it is off here so that the timing defences themselves are what the attacks meet.
    grader = Grader(task, hw, Path(tempfile.mkdtemp(prefix="kg-g-")), GraderConfig(warm_worker=False,
                                                                                   static_check=False))
    g = grader.grade(ws, seed=11)
    logs = {p.name: p.read_text()[-1500:] for p in grader.work_dir.glob("grade-*/*.log")}
    return {"score": g.score, "correct": g.correct, "speedup": g.speedup,
            "stages": [(s.name, s.passed, s.messages) for s in g.stages],
            "timing_modes": [c.get("timing_mode") for c in g.configs], "logs": logs}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="attacks.json")
    args = ap.parse_args()
    task, hw = get_task("triton-rmsnorm"), detect_profile()
    if hw.interpreter:
        sys.exit("needs a GPU: the attacks are on the timing")
    baseline = (task.root / "kernel.py").read_text()
    tail = baseline.replace("def rmsnorm(", "def _honest_rmsnorm(") + "\n" + (HERE / "kernels" / "attack_untimed_tail.py").read_text()
    out = {"machine": hw.name, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for name, source in (("fingerprint", (HERE / "kernels" / "attack_fingerprint.py").read_text()), ("untimed_tail", tail)):
        out[name] = grade(task, hw, source)
        r = out[name]
        print(f"{name}: score {r['score']:.1f} correct {r['correct']} speedup {r['speedup']}", flush=True)
        for stage in r["stages"]:
            print("   ", stage[0], stage[1], "; ".join(stage[2])[:600], flush=True)
        print("    timing modes:", r["timing_modes"], flush=True)
        for logname, text in r["logs"].items():
            print(f"    {logname}: {text[-600:]}", flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
