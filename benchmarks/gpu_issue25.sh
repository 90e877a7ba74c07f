# Issue 25 on the H200 (one call, under 10 minutes): examples/learning_loop.py on triton-rmsnorm, where the score
# carries the speedup term. With `carry: [".whl", ".deb"]`:
#     bash benchmarks/gpu_issue25.sh
# Copy $OUT into benchmarks/results/ with the machine and date.
source benchmarks/gpu_setup.sh
mkdir -p "$OUT"
(nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; date -u) > "$OUT/machine.txt" 2>&1
timeout 540 python3 examples/learning_loop.py --episodes 40 --out "$OUT/learning_curve.png" --run-dir /tmp/kg-learn > "$OUT/learning_loop.log" 2>&1
tail -12 "$OUT/learning_loop.log"
