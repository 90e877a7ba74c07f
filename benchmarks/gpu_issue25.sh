# Issue 25 on the H200 (one call, under 8 minutes): examples/learning_loop.py on triton-rmsnorm, where the score
# carries the speedup term, over its factorized space (kernel variant x BLOCK_SIZE x num_warps). With
# `carry: [".whl", ".deb"]`:
#     bash benchmarks/gpu_issue25.sh
# Copy $OUT into benchmarks/results/ with the machine and date.
# Time: about 8-10 s an episode on an H200 (each grade times 5 configs), so 48 episodes are capped by --max-seconds
# 360 (about 36-45 episodes; no episode starts after it, and the summary and curve still follow); the setup takes
# under a minute, and `timeout 420` is the backstop that keeps the call under 8 minutes.
source benchmarks/gpu_setup.sh
mkdir -p "$OUT"
(nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; date -u) > "$OUT/machine.txt" 2>&1
start=$(date +%s)
timeout 420 python3 examples/learning_loop.py --episodes 48 --max-seconds 360 --seed 1 \
    --out "$OUT/learning_curve.png" --run-dir /tmp/kg-learn > "$OUT/learning_loop.log" 2>&1
echo "learning_loop.py: exit $?, $(( $(date +%s) - start )) s" | tee -a "$OUT/machine.txt"
tail -8 "$OUT/learning_loop.log"
