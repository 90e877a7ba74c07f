# Issue 3 on the H200: sandbox tests, the profile action, and benchmarks (a), (b), (c). Output to $OUT.
source benchmarks/gpu_setup.sh
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
{
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
python3 -m pytest -q tests/test_sandbox.py 2>&1 | tail -2
python3 - <<'PY'
import kernelgym
from kernelgym.env import KernelArenaEnv
e = KernelArenaEnv(run_dir="/tmp/kgp")
e.reset(seed=0)
print(e.step({"kind": "profile", "config": 4})[0]["output"][-3500:])
o, r, *_ , info = e.step({"kind": "submit"})
print("baseline submit via env:", r, info["grade"]["elapsed_s"])
e.close()
PY
python3 benchmarks/grading.py --n ${N:-20} --latency-n 3 --only ${ONLY:-abc} --out $OUT/grading.json
} 2>&1 | tee $OUT/gpu_issue3.log
