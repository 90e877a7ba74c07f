# Several GPU scripts in one device call, each with an $OUT of its own, packed into one archive: the device tool
# brings back at most 8 files from $OUT, and the scripts together write more. On the device machine, from the
# repository root, with `carry: [".whl", ".deb"]`:
#     bash benchmarks/gpu_calls.sh "gpu_issue24.sh baselines" "gpu_replay.sh"
# Each argument is a script under benchmarks/ and its arguments. Writes $OUT/NAME.tar.gz per script (NAME: the
# script and its arguments, joined by '_') and prints each script's output as it runs. COMMIT=<hash> is passed on.
set -u
FINAL_OUT="$OUT"
mkdir -p "$FINAL_OUT"
for call in "$@"; do
    name=$(echo "$call" | tr ' /' '__' | tr -cd 'A-Za-z0-9._-')
    name=${name%.sh}
    sub="/tmp/gpu-calls/$name"
    rm -rf "$sub" && mkdir -p "$sub"
    start=$(date +%s)
    echo "=== $call"
    # shellcheck disable=SC2086 - the argument is a script and its arguments, split on purpose
    OUT="$sub" bash benchmarks/$call
    echo "=== $call: exit $?, $(( $(date +%s) - start )) s" | tee -a "$sub/calls.txt"
    tar -czf "$FINAL_OUT/$name.tar.gz" -C "$sub" .
done
