# Issue 26 (rollouts on Ray) on the H200: gradings per hour of the Ray vector env against kernelgym's local
# AsyncVectorEnv at the same N, in one call (benchmarks/ray_throughput.py). Ray is not installed on the device
# machine: first build its small wheel here, on the checkout's machine (24 MB in .raywhl/, gitignored):
#     bash benchmarks/ray_wheel.sh
# then on the device machine, from the repository root, with `carry: [".whl", ".deb", ".raywhl"]` (about 61 MiB
# of the 64 MiB allowed, with the working tree):
#     bash benchmarks/gpu_issue26.sh smoke   # 2 envs, 20 s per backend: the plumbing on the GPU (about 2 min)
#     bash benchmarks/gpu_issue26.sh best    # 8 envs (issue 24's best N), 120 s per backend (about 6 min)
#     bash benchmarks/gpu_issue26.sh quick   # 8 envs, 60 s per backend (about 3.5 min)
#     bash benchmarks/gpu_issue26.sh warm    # 8 envs, Ray first, one uncounted round each, then 60 s (about 5 min)
#     bash benchmarks/gpu_issue26.sh sweep   # 4, 8 and 16 envs, 60 s per backend each (about 9 min)
# COMMIT=<hash> names the commit measured in machine.txt. Copy $OUT into benchmarks/results/ with the machine and
# date.
source benchmarks/gpu_setup.sh
# ray and the dependencies the machine lacks, into their own folder ahead of the others on the path; Ray's worker
# processes inherit PYTHONPATH from this shell.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/raysite .raywhl/*.whl
export PYTHONPATH=/tmp/raysite:$PYTHONPATH
mkdir -p "$OUT"
(nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import torch, triton, ray; print(torch.__version__, triton.__version__, ray.__version__)"; date -u; echo "commit ${COMMIT:-$(git rev-parse HEAD 2>/dev/null)}") > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
rt() { timeout "$1" python3 benchmarks/ray_throughput.py --task "$2" --envs "$3" --seconds "$4" --out "$OUT/$5" "${@:6}" 2>&1 | grep -v "^\s*$" | grep -v "WARNING" | cut -c1-600; }
case "$1" in
smoke)
    rt 200 triton-rmsnorm 2 20 smoke_rmsnorm_n2.json
    ;;
best)
    rt 500 triton-rmsnorm 8 120 best_rmsnorm_n8.json
    ;;
quick)
    rt 330 triton-rmsnorm 8 60 quick_rmsnorm_n8.json
    ;;
warm)
    # Ray first (the host is cold then; the warm-up round absorbs it), one uncounted round per backend.
    rt 400 triton-rmsnorm 8 60 warm_rmsnorm_n8.json --order ray,local --warmup-rounds 1
    ;;
sweep)
    rt 560 triton-rmsnorm 4,8,16 60 sweep_rmsnorm.json
    ;;
*)
    echo "usage: bash benchmarks/gpu_issue26.sh smoke|best|quick|warm|sweep" >&2
    exit 2
    ;;
esac
