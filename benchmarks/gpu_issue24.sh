# Issue 24 (the grading pipeline's throughput) on the H200, in calls of under 10 minutes each. On the device machine,
# from the repository root, with `carry: [".whl", ".deb"]`:
#     bash benchmarks/gpu_issue24.sh breakdown   # where a grading's time goes, 1, 8 and 16 envs (about 6 min)
#     bash benchmarks/gpu_issue24.sh sweep       # gradings per hour, 1-16 envs, rmsnorm and matmul (about 9 min)
#     bash benchmarks/gpu_issue24.sh all       # one call: rmsnorm at 1, 8 and 16 envs, matmul at 8, then the
#                                               issue-25 learning loop (about 9 min)
#     bash benchmarks/gpu_issue24.sh quality     # noise (rmsnorm against itself, 20 gradings), baselines 220 +- 1%
#     bash benchmarks/gpu_issue24.sh final       # one call: rmsnorm at 1 and 8 envs (8 also at 1 harness thread), matmul at 8 over a longer
#                                               window (past its autotuning), cuda-softmax's reset at 1 env (7 min)
#     bash benchmarks/gpu_issue24.sh baselines   # every Triton baseline graded once (220 +- 1%), about 4 min
#     bash benchmarks/gpu_issue24.sh session4    # rmsnorm at 1, 8, 12 envs, references on the GPU or not, the schedule (9 min)
#     bash benchmarks/gpu_issue24.sh session4b   # cuda-softmax's warm resets, matmul at 8 past its first gradings (6 min)
#     bash benchmarks/gpu_issue24.sh session4b-cuda | session4b-matmul   # one half of session4b (2 or 4 min)
#     bash benchmarks/gpu_issue24.sh session5    # rmsnorm at 8 and 1, matmul at 8, with the harness's CPU per phase (5 min)
#     bash benchmarks/gpu_issue24.sh session6    # A/B: this tree against .baseline-tree, rmsnorm at 1 and 8 (5 min)
#     bash benchmarks/gpu_issue24.sh session7    # A/B: this tree against .baseline-tree, rmsnorm at 1 and 8 (5 min)
#     bash benchmarks/gpu_issue24.sh session7-matmul  # matmul at 8 envs (4.5 min)
#     bash benchmarks/gpu_issue24.sh session8    # the traced checked run: 1 env, A/B at 8 envs, four heavy baselines (7.5 min)
#     bash benchmarks/gpu_issue24.sh session8-matmul  # matmul at 8 envs, traced checked runs (4.5 min)
#     bash benchmarks/gpu_issue24.sh session9    # prepare_ahead at 1 env, on against off; matmul at 4 and 8 envs (7 min)
#     bash benchmarks/gpu_issue24.sh session10   # the same after 8a6a352 (spawned at reset), host-held pools, fewer runs (4 min)
#     bash benchmarks/gpu_issue24.sh session11   # session10, then the Triton baselines in the time left, one call (9 min)
#     bash benchmarks/gpu_issue24.sh session12   # prepare_ahead two episodes deep at 1 env (20 gradings: the noise), matmul at 8 and 4 envs (8 min)
#     bash benchmarks/gpu_issue24.sh session13   # prepare_ahead 3 deep at 1 env; matmul at 4 envs: turns, quiet turns, none (9 min)
#     bash benchmarks/gpu_issue24.sh session13b  # rmsnorm at 8 envs with turns and quiet turns; the Triton baselines (9 min)
#     bash benchmarks/gpu_issue24.sh baselines-parallel [--references-on-gpu]  # the 24 Triton baselines, 4 at once (5 min)
# COMMIT=<hash> names the commit measured in machine.txt (the device's copy of .git is not the checkout's).
# Copy $OUT into benchmarks/results/ with the machine and date.
started=$(date +%s)  # session11 fits its parts into one device call by this clock
source benchmarks/gpu_setup.sh
mkdir -p "$OUT"
(nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; date -u; echo "commit ${COMMIT:-$(git rev-parse HEAD 2>/dev/null)}") > "$OUT/machine.txt" 2>&1
tp() { timeout "$1" python3 benchmarks/throughput.py --task "$2" --envs "$3" --seconds "$4" --out "$OUT/$5" "${@:6}" 2>&1 | grep -v "^\s*$" | cut -c1-600; }
# A/B: this tree against .baseline-tree (carried), rmsnorm at 1 and 8 envs, alternating, each side with a grading
# cache of its own; results as $OUT/<prefix>_rmsnorm_n<envs>_<base|new>.json.
ab_rmsnorm() {
    for n in 1 8; do
        for side in base new; do
            root=$PWD; [ "$side" = base ] && root=$PWD/.baseline-tree
            window=30; [ "$n" = 8 ] && window=45
            (cd "$root" && KERNELGYM_CACHE_DIR=/tmp/kg-cache-$side timeout $((window + 50)) python3 benchmarks/throughput.py \
                --task triton-rmsnorm --envs $n --seconds $window --out "$OUT/$1_rmsnorm_n${n}_$side.json" 2>&1 \
                | grep -v "^\s*$" | cut -c1-400)
        done
    done
}
baselines_parallel() {
    # Every Triton baseline graded once quiet and once observed (220 +- 1%), the 24 tasks in 4 processes at once
    # (round-robin by name), merged into one table (about 4-5 min).
    names=$(python3 -c "from kernelgym.discovery import discover_tasks; print(' '.join(n for n, t in sorted(discover_tasks().items()) if t.spec.language == 'triton'))")
    for k in 0 1 2 3; do
        group=$(echo $names | tr ' ' '\n' | awk -v k=$k 'NR % 4 == k' | paste -sd, -)
        budget=${BASELINES_BUDGET_S:-290}
        timeout $((budget + 40)) python3 benchmarks/task_suite.py --only "$group" --n 1 --observed 1 --fast-n 0 --no-unseen \
            --budget-s $budget --out "$OUT/baselines_$k.json" "${@:2}" > "$OUT/baselines_$k.log" 2>&1 &
    done
    wait
    python3 benchmarks/task_suite.py --merge "$OUT"/baselines_[0-3].json --out "$OUT/baselines.json" > "$OUT/baselines.md" 2>&1
    cat "$OUT/baselines.md" | head -40
}
session8_ab() {
    # This tree with --observe-in-checked-run (under the tracer the checked run traces itself: no observed run
    # apart, one process and one CUDA context less per grading), in one call of about 7.5 min: first 1 env for 30 s,
    # which stops the call (keeping the device time) unless the untouched baseline scores about 220 with the observer passed; then the A/B at 8 envs
    # against .baseline-tree (`git archive 05506b4 kernelgym tasks policies hardware benchmarks/throughput.py
    # pyproject.toml`, carried), each side with a grading cache of its own; then four baselines with heavy traces
    # (autotuned matmul, flash-attention, cross-entropy's 2 GiB values, argmax-sampling), graded quiet and observed.
    (KERNELGYM_CACHE_DIR=/tmp/kg-cache-new timeout 100 python3 benchmarks/throughput.py --task triton-rmsnorm \
        --envs 1 --seconds 30 --observe-in-checked-run --out "$OUT/s8_rmsnorm_n1_new.json" 2>&1 | grep -v "^\s*$" | cut -c1-400)
    python3 - "$OUT/s8_rmsnorm_n1_new.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
rows = r["gradings_detail"]
print("smoke:", r["gradings"], "gradings, rewards", r["rewards"], "observer", sorted({str(g.get("checks", {}).get("observer")) for g in rows}), "errors", r["errors"][:2])
ok = rows and all(g.get("checks", {}).get("observer") == "passed" for g in rows) and min(r["rewards"]) > 200
sys.exit(0 if ok else 1)
PY
    for side in base new; do
        root=$PWD; flag=--observe-in-checked-run; [ "$side" = base ] && root=$PWD/.baseline-tree && flag=
        (cd "$root" && KERNELGYM_CACHE_DIR=/tmp/kg-cache-$side timeout 95 python3 benchmarks/throughput.py \
            --task triton-rmsnorm --envs 8 --seconds 45 $flag --out "$OUT/s8_rmsnorm_n8_$side.json" 2>&1 \
            | grep -v "^\s*$" | cut -c1-400)
    done
}
session8_heavy() {
    for group in triton-matmul,triton-cross-entropy triton-flash-attention,triton-argmax-sampling; do
        timeout 170 python3 benchmarks/task_suite.py --only "$group" --n 1 --observed 1 --fast-n 0 --no-unseen \
            --observe-in-checked-run --budget-s 140 --out "$OUT/s8_baselines_${group%%,*}.json" > "$OUT/s8_baselines_${group%%,*}.log" 2>&1 &
    done
    wait
    python3 benchmarks/task_suite.py --merge "$OUT"/s8_baselines_*.json --out "$OUT/s8_baselines.json" > "$OUT/s8_baselines.md" 2>&1
    head -30 "$OUT/s8_baselines.md"
}
case "$1" in
breakdown)
    tp 90 triton-rmsnorm 1 40 breakdown_n1.json
    tp 170 triton-rmsnorm 8 90 breakdown_n8.json
    tp 190 triton-rmsnorm 16 90 breakdown_n16.json
    ;;
sweep)
    tp 330 triton-rmsnorm 1,4,8,16 60 sweep_rmsnorm.json
    tp 230 triton-matmul 8,16 80 sweep_matmul.json
    ;;
all)
    tp 100 triton-rmsnorm 1 40 all_rmsnorm_n1.json
    tp 120 triton-rmsnorm 8 60 all_rmsnorm_n8.json
    tp 130 triton-rmsnorm 16 60 all_rmsnorm_n16.json
    start=$(date +%s)
    timeout 170 python3 examples/learning_loop.py --episodes 60 --max-seconds 150 --seed 1 \
        --out "$OUT/learning_curve.png" --run-dir /tmp/kg-learn > "$OUT/learning_loop.log" 2>&1
    echo "learning_loop.py: exit $?, $(( $(date +%s) - start )) s" | tee -a "$OUT/machine.txt"
    tail -6 "$OUT/learning_loop.log"
    tp 100 triton-matmul 8 50 all_matmul_n8.json
    ;;
final)
    tp 80 triton-rmsnorm 1 35 final_rmsnorm_n1.json
    tp 100 triton-rmsnorm 8 50 final_rmsnorm_n8.json
    tp 100 triton-rmsnorm 8 50 final_rmsnorm_n8_t1.json --harness-threads 1
    tp 180 triton-matmul 8 110 final_matmul_n8.json
    tp 100 cuda-softmax 1 40 final_cuda_softmax_n1.json
    ;;
session4)
    # Throughput after this session's changes (the harness's input sets built at once; references and comparisons
    # on the GPU and the GPU schedule, both opt-in until these numbers stand): rmsnorm at 1 and 8 envs as default,
    # 8 envs with references on the GPU, 8 with the schedule too, 12 with references on the GPU (about 9 min).
    tp 75 triton-rmsnorm 1 30 s4_rmsnorm_n1.json
    tp 95 triton-rmsnorm 8 45 s4_rmsnorm_n8.json
    tp 95 triton-rmsnorm 8 45 s4_rmsnorm_n8_refgpu.json --references-on-gpu
    tp 95 triton-rmsnorm 8 45 s4_rmsnorm_n8_refgpu_sched.json --references-on-gpu --gpu-schedule
    tp 95 triton-rmsnorm 12 40 s4_rmsnorm_n12_refgpu.json --references-on-gpu
    tp 75 triton-rmsnorm 1 30 s4_rmsnorm_n1_refgpu.json --references-on-gpu
    ;;
session4b)
    # cuda-softmax at 1 env over a window long enough for warm resets, matmul at 8 past its first gradings, both
    # with references on the GPU (about 6 min).
    tp 120 cuda-softmax 1 75 s4_cuda_softmax_n1.json --references-on-gpu
    tp 210 triton-matmul 8 140 s4_matmul_n8_refgpu.json --references-on-gpu
    ;;
session5)
    # After references moved to the GPU by default: rmsnorm at 8 envs and matmul at 8 envs, with the harness's CPU
    # seconds per phase in each grading's checked_run_s / observed_run_s (cpu.*: where the host's CPU goes) (4.5 min).
    tp 95 triton-rmsnorm 8 45 s5_rmsnorm_n8.json
    tp 75 triton-rmsnorm 1 30 s5_rmsnorm_n1.json
    tp 150 triton-matmul 8 100 s5_matmul_n8.json
    ;;
session6)
    # A/B in one call: this tree (the tracer's run ahead prepares beside the timed runs; the observed run goes while
    # the outputs are compared) against the tree before it (.baseline-tree: `git archive 390e46e kernelgym tasks
    # policies hardware benchmarks/throughput.py pyproject.toml`, carried), rmsnorm at 1 and 8 envs, alternating,
    # each side with a grading cache of its own (about 5 min).
    ab_rmsnorm s6
    ;;
session7)
    # A/B in one call: this tree (the harness's inputs through memfds, one hand-over; CUDA's start beside the input
    # build) against .baseline-tree (`git archive 5f04c33 kernelgym tasks policies hardware benchmarks/throughput.py
    # pyproject.toml`, carried), rmsnorm at 1 and 8 envs, alternating, each side with a grading cache of its own
    # (about 5 min).
    ab_rmsnorm s7
    ;;
session8)
    session8_ab || exit 1
    session8_heavy
    ;;
session8-short)
    # The first two parts of session8 alone (about 5 min).
    session8_ab
    ;;
session9)
    # The env's prepare_ahead at 1 env (the next grading prepared while the last is graded), on against off, rmsnorm,
    # 30 s each, then on again (the first side pays the caches); then matmul at 4 and 8 envs with the checks' reasons
    # kept (why its gradings went untimed on the 80 GB H100). About 7 min.
    tp 75 triton-rmsnorm 1 30 s9_rmsnorm_n1_on_cold.json --prepare-ahead
    tp 75 triton-rmsnorm 1 30 s9_rmsnorm_n1_off.json --no-prepare-ahead
    tp 75 triton-rmsnorm 1 30 s9_rmsnorm_n1_on.json --prepare-ahead
    tp 130 triton-matmul 4 75 s9_matmul_n4.json
    tp 130 triton-matmul 8 75 s9_matmul_n8.json
    ;;
session10)
    # prepare_ahead with the next episode's processes spawned at the reset (8a6a352), rmsnorm at 1 env, on (the first
    # side pays the caches), off, on; then matmul at 8 envs with its timing pools held on the host until their config
    # is timed (3904bf0, 9ad91d9), its inputs normal quantiles picked by raw random bits (36ee731), fewer timed runs for
    # its long configs (af95c2e: timed_ms_per_config) and a baseline out of GPU memory an infrastructure fault (9e14ede).
    # About 4 min.
    tp 55 triton-rmsnorm 1 20 s10_rmsnorm_n1_on_cold.json --prepare-ahead
    tp 55 triton-rmsnorm 1 20 s10_rmsnorm_n1_off.json --no-prepare-ahead
    tp 55 triton-rmsnorm 1 20 s10_rmsnorm_n1_on.json --prepare-ahead
    tp 120 triton-matmul 8 70 s10_matmul_n8.json
    ;;
session13)
    # PREPARE_AHEAD_DEPTH 3 (three episodes made ahead) at 1 env, on, over 45 s (about 20 gradings: the 2 s and
    # noise targets; off was 3.63 s on an H100 in session12); then, with the host's share of a grading cut (this
    # session: matmul's input sets drawn per cache-sized chunk and mapped into the harness, outputs mapped from a
    # snapshot: about 10 CPU-s a matmul grading less on the 2-core machine), matmul at 4 envs with prepare_ahead:
    # the GPU schedule on, quiet turns (other gradings' GPU work waits while a turn is held), and off. In session12
    # 19 of 58 gradings had their speedup withheld (120) without turns, the traced candidate's kernels 1.2-10x
    # slower than the baseline's observation, which was traced with the GPU to itself. Ends by 540 s after the
    # script began. About 9 min.
    # DEADLINE_S (default 540) ends it sooner where the session has less device time left: each run starts only
    # where its time limit fits before the deadline.
    fits() { local left=$(( started + ${DEADLINE_S:-540} - $(date +%s) )); echo "$2: ${left} s left"; [ "$left" -ge "$1" ]; }
    fits 90 "rmsnorm at 1 env" && tp 90 triton-rmsnorm 1 45 s13_rmsnorm_n1_on.json --prepare-ahead
    fits 125 "matmul at 4 envs, scheduled" && tp 125 triton-matmul 4 80 s13_matmul_n4_ahead_schedule.json --prepare-ahead --gpu-schedule
    fits 125 "matmul at 4 envs, quiet turns" && tp 125 triton-matmul 4 80 s13_matmul_n4_ahead_quiet.json --prepare-ahead --gpu-quiet-turns
    fits 125 "matmul at 4 envs" && tp 125 triton-matmul 4 80 s13_matmul_n4_ahead.json --prepare-ahead
    ;;
session13b)
    # The schedule's cost where gradings are short: rmsnorm at 8 envs with turns and with quiet turns (3742 an hour
    # without on an H100 in session 11); then every Triton baseline 220 +- 1% after this session's changes to how
    # inputs reach the harness and outputs the parent (values unchanged), 4 tasks at once, in the time left. About
    # 9 min; ends by DEADLINE_S (default 540) after the script began.
    fits() { local left=$(( started + ${DEADLINE_S:-540} - $(date +%s) )); echo "$2: ${left} s left"; [ "$left" -ge "$1" ]; }
    fits 100 "rmsnorm at 8 envs, scheduled" && tp 100 triton-rmsnorm 8 55 s13b_rmsnorm_n8_schedule.json --gpu-schedule
    fits 100 "rmsnorm at 8 envs, quiet turns" && tp 100 triton-rmsnorm 8 55 s13b_rmsnorm_n8_quiet.json --gpu-quiet-turns
    left=$(( started + ${DEADLINE_S:-540} - $(date +%s) ))
    echo "the Triton baselines: ${left} s left"
    [ "$left" -ge 200 ] && BASELINES_BUDGET_S=$((left - 60)) baselines_parallel
    ;;
session12)
    # e7f0936 (prepare_ahead: the episode after the next spawned at each submit, so its worker has imported torch
    # when asked to prepare) at 1 env: on (cold), off, on over 45 s (about 20 gradings: the noise target); db9c4e8
    # (the env process's GPU references without their bound, its CUDA cache emptied) with matmul at 8 envs, then at
    # 4 envs with prepare_ahead in the time left (two harnesses with a CUDA context per env: not at 8 on 80 GB).
    # Ends by 480 s after the script began. About 8 min.
    tp 45 triton-rmsnorm 1 15 s12_rmsnorm_n1_on_cold.json --prepare-ahead
    tp 55 triton-rmsnorm 1 20 s12_rmsnorm_n1_off.json --no-prepare-ahead
    tp 90 triton-rmsnorm 1 45 s12_rmsnorm_n1_on.json --prepare-ahead
    tp 150 triton-matmul 8 90 s12_matmul_n8.json
    left=$(( started + 480 - $(date +%s) ))
    echo "matmul at 4 envs with prepare_ahead: ${left} s left"
    [ "$left" -ge 90 ] && tp $((left - 10)) triton-matmul 4 $((left - 55)) s12_matmul_n4_ahead.json --prepare-ahead
    ;;
session11)
    # session10 and baselines-parallel in one device call (one machine start), ending by 540 s after the script
    # began, inside the call's 600 s (gpu_calls.sh packs $OUT only after the script ends): rmsnorm at 1 env with
    # prepare_ahead on (cold), off, on; matmul at 8 envs (host-held pools drawn again on the GPU: 38a07b6; relative
    # perturbation: 55980bc); then the 24 Triton baselines, 4 at once, in the time left (the ones left out are named
    # in baselines.md). About 9 min.
    tp 45 triton-rmsnorm 1 15 s11_rmsnorm_n1_on_cold.json --prepare-ahead
    tp 55 triton-rmsnorm 1 20 s11_rmsnorm_n1_off.json --no-prepare-ahead
    tp 55 triton-rmsnorm 1 20 s11_rmsnorm_n1_on.json --prepare-ahead
    tp 110 triton-matmul 8 60 s11_matmul_n8.json
    left=$(( started + 540 - $(date +%s) - 45 ))
    echo "baselines: ${left} s of budget left"
    [ "$left" -ge 60 ] && BASELINES_BUDGET_S=$left baselines_parallel
    ;;
session10-matmul)
    # Only matmul at 8 envs from session10 (what a session's last device minutes allow, about 2.5 min).
    tp 125 triton-matmul 8 80 s10_matmul_n8.json
    ;;
session8-matmul)
    # matmul at 8 envs, whose observed runs apart ran the 80 GB H100 out of memory (2026-12-07), now without them.
    tp 270 triton-matmul 8 140 s8_matmul_n8.json --observe-in-checked-run
    ;;
session7-matmul)
    # matmul at 8 envs, whose gradings waited a median 26.8 s for the observed run ahead to prepare on the H200
    # (2026-12-04), a wait the tracer no longer has (about 4.5 min).
    tp 270 triton-matmul 8 140 s7_matmul_n8.json
    ;;
session4b-cuda)
    tp 120 cuda-softmax 1 75 s4_cuda_softmax_n1.json --references-on-gpu
    ;;
session4b-matmul)
    tp 210 triton-matmul 8 140 s4_matmul_n8_refgpu.json --references-on-gpu
    ;;
baselines-parallel)
    baselines_parallel "$@"
    ;;
baselines)
    timeout 250 python3 benchmarks/task_suite.py --n 1 --observed 1 --fast-n 0 --no-unseen --budget-s 240 --out "$OUT/baselines.json" > "$OUT/baselines.log" 2>&1
    grep -E "^\||error" "$OUT/baselines.log" | head -40
    ;;
quality)
    timeout 300 python3 benchmarks/task_suite.py --only triton-rmsnorm --n 20 --observed 20 --fast-n 0 --no-unseen --budget-s 280 --out "$OUT/noise_rmsnorm.json" > "$OUT/noise_rmsnorm.log" 2>&1
    grep -E "^\||error" "$OUT/noise_rmsnorm.log" | head -10
    timeout 250 python3 benchmarks/task_suite.py --n 1 --observed 1 --fast-n 0 --no-unseen --budget-s 240 --out "$OUT/baselines.json" > "$OUT/baselines.log" 2>&1
    grep -E "^\||error" "$OUT/baselines.log" | head -40
    ;;
esac
