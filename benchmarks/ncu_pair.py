"""Run a kernel file on one config a few times; meant to run under ncu (benchmark (b)).

    ncu --clock-control none --metrics gpu__time_duration.sum --csv python benchmarks/ncu_pair.py KERNEL.py CONFIG_JSON
"""
import importlib.util
import json
import sys

import torch

sys.path.insert(0, "tasks/triton/rmsnorm")
from reference import make_inputs  # noqa: E402

spec = importlib.util.spec_from_file_location("k", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
cfg = json.loads(sys.argv[2])
args = make_inputs(cfg, 0, "cuda")
for _ in range(int(sys.argv[3]) if len(sys.argv) > 3 else 12):
    mod.rmsnorm(*args)
torch.cuda.synchronize()
