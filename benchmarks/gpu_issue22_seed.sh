# Issue 22 (seed_not_in_candidate_memory) on the H200: what building the seeded inputs in a forked child costs for the
# GPU's configs, real timed gradings of the rmsnorm baseline (verification inputs and the timing pool made the new
# way; the observed run too), and the freed-memory attack graded on the GPU profile by a warm worker. On the device
# machine, from the repository root, with `carry: [".whl", ".deb"]`:  bash benchmarks/gpu_issue22_seed.sh
source benchmarks/gpu_setup.sh
mkdir -p "$OUT"
(nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; ldd --version | head -1; date -u) > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
timeout 150 python3 benchmarks/seed_isolation_cost.py --seen --timed --n 10 --out "$OUT/seed_cost_seen_timed.json" 2>&1 | tail -20
timeout 60 python3 benchmarks/seed_isolation_cost.py --n 20 --out "$OUT/seed_cost_interpreter.json" 2>&1 | grep added
timeout 200 python3 - > "$OUT/attack_gpu.log" 2>&1 <<'PY'
import re, shutil, sys, tempfile
from pathlib import Path
sys.path.insert(0, "tests/attacks")
import seed_from_freed_memory as m
from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig
from kernelgym.hardware import detect_profile
task, hw = get_task("triton-rmsnorm"), detect_profile()
tmp = Path(tempfile.mkdtemp()); ws = tmp / "ws"; ws.mkdir()
for rel in task.public_files():
    shutil.copy(task.root / rel, ws / rel)
(ws / "kernel.py").write_text(m._payload(m.SEED))
grader = Grader(task, hw, tmp / "grading", GraderConfig(static_check=False))
grader.start_worker(seed=m.SEED)
g = grader.grade(ws, seed=m.SEED)
grader.stop_worker()
text = g.summary() + "\n".join(x for s in g.stages for x in s.messages)
print(hw.id, sorted(set(re.findall(r"LEAK found=\[.*?\] scanned=\d+ read=\d+ MiB", text))) or text[-3000:])
PY
tail -3 "$OUT/attack_gpu.log"
timeout 280 python3 benchmarks/grading.py --only a --n 4 --out "$OUT/grading_a.json" > "$OUT/grading_a.log" 2>&1
tail -4 "$OUT/grading_a.log"
