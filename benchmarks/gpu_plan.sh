# The H200 checks still open (issues 11, 13, 14, 15, 16), in three calls of at most 10 minutes each, about 25 minutes
# of device time in all. On the device machine, from the repository root, with `carry: [".whl", ".deb"]`:
#     bash benchmarks/gpu_plan.sh 1    # issue 14: every Triton task's baseline noise and known-faster kernels
#     bash benchmarks/gpu_plan.sh 2    # issues 15, 11: the reference-format loader; the observer, self-grading
#     bash benchmarks/gpu_plan.sh 3    # issues 13, 16: the main job, a GPU fault
# Each writes its files under $OUT (the device tool brings them back); copy them into benchmarks/results/ with the
# machine and date, and say what they show in benchmarks/results/README.md.
source benchmarks/gpu_setup.sh
mkdir -p "$OUT"
(nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; date -u) > "$OUT/machine.txt" 2>&1
case "$1" in
  1)
    timeout 540 python3 benchmarks/task_suite.py --out "$OUT/task_suite.json" --budget-s 500 2>&1 | tee "$OUT/task_suite.log" | grep -E "^\||budget|error" ;;
  2)
    timeout 200 python3 benchmarks/reference_tasks_check.py --out "$OUT/reference_tasks_check.json" > "$OUT/reference_tasks_check.log" 2>&1
    tail -8 "$OUT/reference_tasks_check.log"
    timeout 170 python3 benchmarks/observer_check.py --out "$OUT/observer_check.json" --reports "$OUT/reports" --n 3 > "$OUT/observer_check.log" 2>&1
    grep -E "^==|observed run|latency" "$OUT/observer_check.log" | cut -c1-300
    timeout 100 python3 benchmarks/grading.py --only a --n 25 --out "$OUT/grading_a_tracer.json" > "$OUT/grading_a_tracer.log" 2>&1
    timeout 100 python3 benchmarks/grading.py --only a --n 25 --observer off --out "$OUT/grading_a_off.json" > "$OUT/grading_a_off.log" 2>&1
    grep -h "(a) self" "$OUT"/grading_a_*.log | cut -c1-90 ;;
  3)
    # The tuner measures each variant with bench.py (about 8 s each on the H200) within the default 50 steps.
    timeout 450 python3 -m kernelgym.cli run --task triton-rmsnorm --policy tuner --run-dir /tmp/main-job > "$OUT/main_job.log" 2>&1
    cp -r /tmp/main-job "$OUT/main-job" 2>/dev/null
    tail -25 "$OUT/main_job.log"
    timeout 100 python3 benchmarks/fault_check.py --out "$OUT/fault.json" 2>&1 | tee "$OUT/fault.log" | tail -8 ;;
  *) echo "usage: bash benchmarks/gpu_plan.sh 1|2|3" >&2; exit 2 ;;
esac
