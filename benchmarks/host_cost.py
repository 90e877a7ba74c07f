"""Host CPU cost of a grading's data movement, without a GPU: the harness's input sets (built by the task's input
builder in forked children and handed to the harness process) and the parent's load of an outputs file.

What it measures: CPU seconds (user + system) of the builder children and of the receiving process for one input
set of a task's seen configs, and wall and CPU seconds of `load_tensors_untrusted` on an outputs file of the seen
configs' sizes. Nothing is timed on a GPU and no kernel runs: this is the host's share of a grading, which bounds
gradings per hour where the host's CPUs are the limit (triton-matmul at 4-8 envs). Run it on the tree to measure;
an A/B runs it once per tree (`git archive <commit> kernelgym tasks benchmarks/host_cost.py`).

    python benchmarks/host_cost.py --task triton-matmul --repeat 3 [--out result.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _cpu_s(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def input_set_cost(task, seed: int) -> dict:
    """One check set of `task`'s seen configs built in a forked child and received here, as the harness does
    (`harness.in_forked_child` of `harness._build_inputs`): CPU seconds of the child and of this process, wall
    seconds, and the set's bytes."""
    import torch

    from kernelgym.grader import harness, protocol
    from kernelgym.grader.reference import load_reference

    builder = load_reference(task)[1]
    configs = task.spec.seen_configs
    children, mine, t = _cpu_s(resource.RUSAGE_CHILDREN), _cpu_s(resource.RUSAGE_SELF), time.monotonic()
    inputs = harness.in_forked_child(lambda: harness._build_inputs(builder, seed, configs, protocol.check_seed))
    # Every page touched once, as moving the set to the device does.
    nbytes = sum(a.numel() * a.element_size() for args in inputs for a in args if isinstance(a, torch.Tensor))
    touched = sum(float(a.view(-1)[::1024].float().sum()) for args in inputs for a in args
                  if isinstance(a, torch.Tensor) and a.numel())
    return {"wall_s": time.monotonic() - t, "builder_cpu_s": _cpu_s(resource.RUSAGE_CHILDREN) - children,
            "receiver_cpu_s": _cpu_s(resource.RUSAGE_SELF) - mine, "bytes": nbytes, "checksum": touched}


def outputs_load_cost(task, directory: Path) -> dict:
    """`load_tensors_untrusted` of an outputs file holding one output per seen config at the reference's shape
    (the check inputs' reference outputs, as the harness saves a correct kernel's): wall and CPU seconds."""
    import torch

    from kernelgym.grader.protocol import output_key
    from kernelgym.grader.reference import load_reference
    from kernelgym.grader.untrusted import load_tensors_untrusted

    path = directory / "outputs.pt"
    if not path.exists():
        reference, builder = load_reference(task)
        saved = {}
        for i, cfg in enumerate(task.spec.seen_configs):
            # The reference's output shapes from its inputs on the meta device: no CPU GEMM of the real sizes.
            args = [a.to("meta") if isinstance(a, torch.Tensor) else a for a in builder(cfg, i, "cpu")]
            refs = reference(*args)
            for o, ref in zip(task.spec.outputs, refs if isinstance(refs, (tuple, list)) else (refs,)):
                saved[output_key(i, o.name)] = torch.ones(ref.shape, dtype=getattr(torch, o.dtype_for(cfg)))
        torch.save(saved, path)
    mine, t = _cpu_s(resource.RUSAGE_SELF), time.monotonic()
    loaded = load_tensors_untrusted(path, max_bytes=16 << 30, max_unpacked_bytes=16 << 30)
    touched = sum(float(v.view(-1)[::1024].float().sum()) for v in loaded.values() if v.numel())
    return {"wall_s": time.monotonic() - t, "cpu_s": _cpu_s(resource.RUSAGE_SELF) - mine,
            "bytes": path.stat().st_size, "checksum": touched}


def main(argv: list[str] | None = None) -> int:
    from kernelgym.discovery import get_task

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="triton-matmul")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    task = get_task(args.task)
    sets = []
    for r in range(args.repeat):
        sets.append(input_set_cost(task, 1000 * r))
        print(f"input set {r}: {json.dumps({k: round(v, 3) for k, v in sets[-1].items()})}", flush=True)
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            loads.append(outputs_load_cost(task, Path(tmp)))
            print(f"outputs load {r}: {json.dumps({k: round(v, 3) for k, v in loads[-1].items()})}", flush=True)
    med = lambda rows, key: round(statistics.median(row[key] for row in rows), 3)  # noqa: E731
    import kernelgym

    result = {"task": args.task, "tree": str(Path(kernelgym.__file__).parent.parent),
              "machine": f"{platform.node()}, {os.cpu_count()} CPUs", "date": time.strftime("%F"),
              "note": "host CPU only: no GPU, no kernel timed",
              "input_set": {k: med(sets, k) for k in ("wall_s", "builder_cpu_s", "receiver_cpu_s", "bytes")},
              "outputs_load": {k: med(loads, k) for k in ("wall_s", "cpu_s", "bytes")},
              "runs": {"input_set": sets, "outputs_load": loads}}
    print(json.dumps({k: result[k] for k in ("task", "tree", "input_set", "outputs_load")}))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
