"""Grades a CUDA task's unchanged baseline with the real grader on a GPU, a few times, into a fresh build cache.

Prints, per grading: score, speedup, correctness, the builds it ran (time, and whether each came from the cache) and
the grading's wall time. The first grading builds; later ones should find unchanged sources in the cache. Exits 1
when the baseline is not correct on every grading.

    python benchmarks/cuda_task_check.py [--task cuda-gelu] [--n 3]
"""
import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.grader import build as builds
from kernelgym.hardware import detect_profile

builds_run = []
_build = builds.build


def timed_build(*args, **kwargs):
    """builds.build, recording (seconds, cached, ok) of each call."""
    start = time.monotonic()
    result = _build(*args, **kwargs)
    builds_run.append((time.monotonic() - start, result.cached, result.ok))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="cuda-gelu")
    parser.add_argument("--n", type=int, default=3)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="kg-cuda-check-"))
    os.environ["KERNELGYM_CACHE_DIR"] = str(scratch / "cache")  # a fresh cache: the first grading must build
    builds.build = timed_build
    task, hardware = get_task(args.task), detect_profile()
    workspace = scratch / "workspace"
    workspace.mkdir()
    for rel in task.public_files():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(task.root / rel, workspace / rel)
    grader = Grader(task, hardware, scratch / "work", GraderConfig())
    print(f"{task.env_id} on {hardware.name}; cache {scratch / 'cache'}")
    all_correct = True
    for i in range(args.n):
        builds_run.clear()
        start = time.monotonic()
        grade = grader.grade(workspace, seed=i)
        wall = time.monotonic() - start
        ran = ", ".join(f"{'cached' if cached else 'built'} {s:.1f} s{'' if ok else ' FAILED'}"
                        for s, cached, ok in builds_run)
        notes = grader.session.build_notes if grader.session else []
        print(f"grade {i + 1}: score {grade.score:.1f}, speedup {grade.speedup}, correct {grade.correct}, "
              f"builds [{ran}] {notes}, wall {wall:.1f} s")
        if not grade.correct:
            all_correct = False
            print(grade.summary())
    grader.stop_worker()
    return 0 if all_correct else 1


if __name__ == "__main__":
    sys.exit(main())
