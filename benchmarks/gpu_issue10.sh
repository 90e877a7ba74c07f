# Issue 10 (the grader redesign) on the H200: GPU smoke through the env, the CUDA task graded from its folder,
# the tuple-output Triton task (baseline and a known-faster kernel), the rmsnorm self-grading noise (a) and warm
# submit-to-reward latency (c), and the timing attacks. Output to $OUT. ONLY picks parts (default stcgx).
source benchmarks/gpu_setup.sh
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
ONLY=${ONLY:-stcgx}
{
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
[[ $ONLY == *s* ]] && python3 - <<'PY'
from kernelgym.env import KernelArenaEnv
for task in ("triton-rmsnorm", "triton-fused-add-rmsnorm"):
    e = KernelArenaEnv(task, run_dir="/tmp/kgp")
    e.reset(seed=0)
    print(e.step({"kind": "shell", "cmd": "python check.py"})[0]["output"][-700:])
    o, r, *_, info = e.step({"kind": "submit"})
    g = info["grade"]
    print(task, "baseline submit via env:", r, "elapsed", round(g["elapsed_s"], 2), [c.get("speedup") for c in g["configs"]])
    e.close()
PY
[[ $ONLY == *c* ]] && python3 benchmarks/cuda_task_check.py --task cuda-gelu --n 3
[[ $ONLY == *t* ]] && python3 benchmarks/task_check.py --task triton-fused-add-rmsnorm --n 3 \
    --kernel benchmarks/kernels/fused_add_rmsnorm_fast.py --out $OUT/fused_add_rmsnorm.json
[[ $ONLY == *x* ]] && python3 benchmarks/attacks.py --out $OUT/attacks.json
[[ $ONLY == *g* ]] && python3 benchmarks/grading.py --n ${N:-20} --latency-n 3 --only ac --out $OUT/grading.json
} 2>&1 | tee $OUT/gpu_issue10.log
