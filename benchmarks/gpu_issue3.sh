# Issue 3 on the H200: sandbox tests, an env episode (prepared grading, profile action), the timing-bias
# experiment and benchmarks (a), (b), (c). Output to $OUT. ONLY picks benchmarks (default abc); BIAS=0 skips
# the bias experiment, BIAS_GRADING=1 adds the grading-sequence one; N sets (a)'s gradings; SMOKE=0 skips the
# sandbox tests and the env episodes; ATTACKS=0 skips the kernel-only attacks on the timing (attacks.py).
# (a)'s timed runs go to $OUT/raw, one file per grading: tar them before they are fetched.
source benchmarks/gpu_setup.sh
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
{
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
[ "${SMOKE:-1}" = 1 ] && python3 -m pytest -q -p no:cacheprovider tests/test_sandbox.py 2>&1 | tail -2
[ "${SMOKE:-1}" = 1 ] && python3 - <<'PY'
import time
from kernelgym.env import KernelArenaEnv
e = KernelArenaEnv(run_dir="/tmp/kgp")
for episode in range(2):
    e.reset(seed=episode)
    if episode == 0:
        print(e.step({"kind": "profile", "config": 4})[0]["output"][-1500:])
    time.sleep(8)  # the agent's turn
    o, r, *_ , info = e.step({"kind": "submit"})
    g = info["grade"]
    print("baseline submit via env:", r, "elapsed", round(g["elapsed_s"], 2), g["phases_s"], [c["speedup"] for c in g["configs"]])
    print("  compares (file, config, s, done at s):", [(f, i, round(a, 3), round(b, 3)) for f, i, a, b in e.grader.compare_log])
e.close()
PY
[ "${BIAS:-1}" = 1 ] && python3 benchmarks/timing_bias.py --n ${BIAS_N:-10} --out $OUT/timing_bias.json
[ "${BIAS_GRADING:-0}" = 1 ] && (cd benchmarks && python3 timing_bias_grading.py --n ${BIAS_N:-10} --out $OUT/timing_bias_grading.json)
[ "${ATTACKS:-1}" = 1 ] && python3 benchmarks/attacks.py --out $OUT/attacks.json
python3 benchmarks/grading.py --n ${N:-20} --latency-n 3 --only ${ONLY:-abc} --raw-dir $OUT/raw --out $OUT/grading.json
} 2>&1 | tee $OUT/gpu_issue3.log
