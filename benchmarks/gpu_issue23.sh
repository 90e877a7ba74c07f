# Issue 23 (one env class, the Backend protocol) and the issue-24 starting point on the H200, in one call of under
# 10 minutes. On the device machine, from the repository root, with `carry: [".whl", ".deb"]`:
#     bash benchmarks/gpu_issue23.sh
# 1. Triton baselines and known-faster kernels through the env (the kernel cache and observer paths that moved into
#    the backend); 2. the CUDA tasks' baselines (the build path, load_entry); 3. gradings per hour, 1 and 8 envs.
# Copy $OUT into benchmarks/results/ with the machine and date.
source benchmarks/gpu_setup.sh
mkdir -p "$OUT"
(nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; date -u) > "$OUT/machine.txt" 2>&1
timeout 200 python3 benchmarks/task_suite.py --only triton-rmsnorm,triton-softmax,triton-layernorm --n 2 --observed 1 --fast-n 1 --no-unseen --budget-s 180 --out "$OUT/task_suite.json" > "$OUT/task_suite.log" 2>&1
grep -E "^\||error" "$OUT/task_suite.log" | head -20
timeout 150 python3 benchmarks/native_tasks_check.py --tasks cuda-gelu,cuda-rmsnorm --n 2 --budget-s 140 --out "$OUT/native_tasks.json" --md "$OUT/native_tasks.md" > "$OUT/native_tasks.log" 2>&1
tail -8 "$OUT/native_tasks.log"
timeout 200 python3 benchmarks/throughput.py --task triton-rmsnorm --envs 1,8 --seconds 70 --out "$OUT/throughput.json" 2>&1 | tail -3
