# Issue 27 item 5 on the H200 (one call, about 2 minutes): does a recorded episode's grade come back when
# `kernelgym replay` re-runs its actions on a GPU, within the recorded noise bands? With `carry: [".whl", ".deb"]`:
#     bash benchmarks/gpu_replay.sh
# A scripted triton-rmsnorm episode (BLOCK_SIZE 2048, then submit) is graded once and replayed three times; each
# replay's exit code (0: the grade came back) and its checks (replay.json) go to $OUT. Copy $OUT into
# benchmarks/results/ with the machine and date. Three replays show how often noise alone makes a mismatch.
source benchmarks/gpu_setup.sh
mkdir -p "$OUT"
(nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; date -u) > "$OUT/machine.txt" 2>&1
ACTIONS='{"actions": [{"kind": "edit_file", "path": "kernel.py", "old": "BLOCK_SIZE = 1024", "new": "BLOCK_SIZE = 2048"}]}'
timeout 200 python3 -m kernelgym.cli run --task triton-rmsnorm --policy scripted --policy-config "$ACTIONS" \
    --run-dir /tmp/kg-replay/runs > "$OUT/run.log" 2>&1
echo "run: exit $?" | tee -a "$OUT/machine.txt"
RUN=$(ls -d /tmp/kg-replay/runs/*/ | head -1)
for i in 1 2 3; do
    timeout 150 python3 -m kernelgym.cli replay "$RUN" --run-dir /tmp/kg-replay/replays > "$OUT/replay$i.log" 2>&1
    echo "replay $i: exit $?" | tee -a "$OUT/machine.txt"
done
for f in /tmp/kg-replay/replays/*/replay.json; do cp "$f" "$OUT/$(basename "$(dirname "$f")").json"; done
tail -25 "$OUT/replay1.log"
