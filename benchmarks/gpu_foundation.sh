# Issue 2 acceptance on the H200: the unchanged baseline graded with real GPU timing (expect ~220),
# then the tuner policy end to end. Output goes to $OUT (the device tool brings it back).
source benchmarks/gpu_setup.sh
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
{
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
python3 -c 'import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(0))'
which bwrap && bwrap --version
python3 -m pytest -q -x tests/test_sandbox.py 2>&1 | tail -5
echo "== unchanged baseline, 3 episodes (first fills the baseline cache) =="
python3 -m kernelgym.cli run --task triton-rmsnorm --policy scripted --policy-config '{"actions": []}' --episodes 3 --run-dir /tmp/runs
echo "== tuner =="
python3 -m kernelgym.cli run --task triton-rmsnorm --policy tuner --run-dir /tmp/runs
} 2>&1 | tee $OUT/gpu_foundation.log
cp /tmp/runs/*scripted*/results.json $OUT/baseline_results.json 2>/dev/null
cp /tmp/runs/*tuner*/results.json $OUT/tuner_results.json 2>/dev/null
