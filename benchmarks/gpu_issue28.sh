# Issue 28 on the H200 (one call, under 9 minutes): the tuner over every Triton task, 12 tasks at once in parallel
# processes sharing the GPU, each task's search bounded by --task-budget-s, plus the main job
# (`kernelgym run --task triton-rmsnorm --policy tuner`) in a process of its own. With `carry: [".whl", ".deb"]`:
#     bash benchmarks/gpu_issue28.sh
# Writes $OUT/tuner_suite.json, $OUT/tuner_suite.md and $OUT/tuner_suite.log; copy $OUT into benchmarks/results/
# with the machine and date.
# Time: 24 tasks in 2 waves of 12, each 120 s of search (--task-budget-s) + a confirmation + 2 gradings (about
# 150 s), so the second wave starts near 150 s, no task starts after 240 s (--total-budget-s) and the run ends near
# 320 s. The main job (about 110-250 s alone) runs beside the first wave in a 13th process, with its defaults, and is
# killed at 470 s if it has not ended (--main-job-timeout-s). `timeout 510` is the backstop; the JSON is rewritten
# as each task ends, so a cut run keeps what finished. Parallel tasks share the GPU without one timing schedule:
# the baseline's gradings, taken beside them, show the noise that adds.
source benchmarks/gpu_setup.sh
mkdir -p "$OUT"
(nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; nproc; date -u) > "$OUT/machine.txt" 2>&1
start=$(date +%s)
timeout 510 python3 benchmarks/tuner_suite.py --out "$OUT" --parallel 12 --task-budget-s 120 --total-budget-s 240 \
    --run-dir /tmp/kg-tuner-suite > "$OUT/tuner_suite.log" 2>&1
echo "tuner_suite.py: exit $?, $(( $(date +%s) - start )) s" | tee -a "$OUT/machine.txt"
tail -40 "$OUT/tuner_suite.log"
