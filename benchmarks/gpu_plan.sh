# The H200 checks still open (issues 11, 13, 14), each call at most 10 minutes. On the device machine, from the
# repository root, with `carry: [".whl", ".deb"]`:
#     bash benchmarks/gpu_plan.sh 1           # issue 14: the suite's tasks not yet run (and argmax's unseen configs)
#     bash benchmarks/gpu_plan.sh 1b SKIP     # issue 14: the rest; SKIP = comma-separated tasks call 1 finished
#     bash benchmarks/gpu_plan.sh 2           # issue 11: where the timing bias comes from; the observer; self-grading
#     bash benchmarks/gpu_plan.sh 3           # issue 13: the main job
#     bash benchmarks/gpu_plan.sh 4           # issue 22: the rmsnorm baseline and the provenance attack classes
# Each writes its files under $OUT (the device tool brings them back); copy them into benchmarks/results/ with the
# machine and date, and say what they show in benchmarks/results/README.md. Merge the suite's runs into one table:
#     python benchmarks/task_suite.py --merge RUN.json... --out benchmarks/results/DATE-task-suite.json
# Session 4 (2026-12-01) ran triton-argmax-sampling, -bias-gelu and -bmm completely, and cross-entropy's gradings
# (not in its JSON: the call's time limit cut it): benchmarks/results/2026-12-01-h200-session4/. Session 5
# (2026-12-02) ran nothing: the device time for this work was spent (213 s left, no machine could start).
source benchmarks/gpu_setup.sh
mkdir -p "$OUT"
(nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; date -u) > "$OUT/machine.txt" 2>&1
case "$1" in
  1)
    timeout 60 python3 benchmarks/task_suite.py --only triton-argmax-sampling --n 0 --fast-n 0 --observed 0 --out "$OUT/task_suite_argmax_unseen.json" 2>&1 | tail -3
    timeout 520 python3 benchmarks/task_suite.py --skip triton-argmax-sampling,triton-bias-gelu,triton-bmm --observed 0 --out "$OUT/task_suite_1.json" --budget-s 430 2>&1 | tee "$OUT/task_suite_1.log" | grep -E "^\||budget|error|task [0-9]" ;;
  1b)
    timeout 560 python3 benchmarks/task_suite.py --skip "triton-argmax-sampling,triton-bias-gelu,triton-bmm,$2" --observed 0 --out "$OUT/task_suite_1b.json" --budget-s 470 2>&1 | tee "$OUT/task_suite_1b.log" | grep -E "^\||budget|error|task [0-9]" ;;
  2)
    timeout 90 python3 benchmarks/timing_bias.py --out "$OUT/timing_bias.json" 2>&1 | tee "$OUT/timing_bias.log"
    timeout 170 python3 benchmarks/observer_check.py --out "$OUT/observer_check.json" --reports "$OUT/reports" --n 3 > "$OUT/observer_check.log" 2>&1
    grep -E "^==|observed run|latency" "$OUT/observer_check.log" | cut -c1-300
    timeout 170 python3 benchmarks/grading.py --only a --n 25 --out "$OUT/grading_a_tracer.json" > "$OUT/grading_a_tracer.log" 2>&1
    timeout 150 python3 benchmarks/grading.py --only a --n 25 --observer off --out "$OUT/grading_a_off.json" > "$OUT/grading_a_off.log" 2>&1
    grep -h "(a) self" "$OUT"/grading_a_*.log | cut -c1-90 ;;
  3)
    # The tuner measures each variant with bench.py (about 8 s each on the H200) within the default 50 steps.
    timeout 450 python3 -m kernelgym.cli run --task triton-rmsnorm --policy tuner --run-dir /tmp/main-job > "$OUT/main_job.log" 2>&1
    cp -r /tmp/main-job "$OUT/main-job" 2>/dev/null
    tail -25 "$OUT/main_job.log" ;;
  4)
    # The baseline 5 times (220 +- 1%), each attack class with the default settings and with the static check off
    # (the outside observer alone), then the observer's own attacks and honest twins once.
    timeout 400 python3 benchmarks/provenance_check.py --out "$OUT/provenance_check.json" --n 5 > "$OUT/provenance_check.log" 2>&1
    grep -E "^==" "$OUT/provenance_check.log" | cut -c1-160
    sed -n '/^{/,$p' "$OUT/provenance_check.log" | tail -30
    timeout 150 python3 benchmarks/observer_check.py --out "$OUT/observer_check.json" --n 2 --only torch,forged,honest > "$OUT/observer_check.log" 2>&1
    grep -E "^==" "$OUT/observer_check.log" | cut -c1-200 ;;
  *) echo "usage: bash benchmarks/gpu_plan.sh 1|1b SKIP|2|3|4" >&2; exit 2 ;;
esac
