"""A warm grading worker: `harness.py --serve` in the sandbox, started when an episode starts.

It imports torch and triton (without starting CUDA) while the agent works, then forks one child per grading,
so submit-to-reward skips the interpreter start and the imports while the candidate still runs in a process
of its own. One worker serves one episode and is stopped after its grading: anything a candidate does to the
worker cannot reach another grading.
"""
from __future__ import annotations

import select
import sys
import time
from pathlib import Path

from kernelgym.sandbox import Limits, kill_group, make_sandbox

HARNESS = Path(__file__).resolve().parent / "harness.py"


class GraderWorker:
    """Owns one `harness.py --serve` process.

    Args:
        root: the grading root (writable inside the sandbox); each request's directory lies under it.
        readonly: paths bound read-only (the harness, the pristine baseline copy).
        sandbox: backend name ('bwrap' or 'none'). gpu: pass the GPU in. env: extra variables.
    """

    def __init__(self, root: Path, readonly: list[Path], sandbox: str, gpu: bool, env: dict[str, str],
                 warmup_request: Path | None = None):
        box = make_sandbox(sandbox, root, readonly=[HARNESS, *readonly], gpu=gpu,
                           # NVML-based availability check: the worker must not start CUDA before it forks.
                           env={**env, "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}, drop_caps=True)
        self.proc = box.popen([sys.executable, str(HARNESS), "--serve"], limits=Limits(timeout_s=24 * 3600))
        if warmup_request is not None:
            # Served first, while the agent works: the baseline runs once, so its Triton kernels are compiled
            # into the worker's private cache before the real grading asks for them.
            self.proc.stdin.write(f"{warmup_request}\n")
            self.proc.stdin.flush()

    def alive(self) -> bool:
        """Whether the worker process is still running."""
        return self.proc.poll() is None

    def request(self, request_path: Path, timeout_s: float) -> tuple[int | None, bool]:
        """Serve one request. Returns (child exit code or None, timed_out). On a timeout the worker is killed
        (and with it the child)."""
        if not self.alive():
            return None, False
        try:
            self.proc.stdin.write(f"{request_path}\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None, False
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                return None, True
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                continue
            line = self.proc.stdout.readline()
            if not line:  # the worker died
                return None, False
            parts = line.split(maxsplit=2)
            if len(parts) == 3 and parts[0] == "done" and parts[2].strip() == str(request_path):
                return int(parts[1]), False

    def stop(self) -> None:
        """Kill the worker's process group (the worker, its children and anything they started)."""
        kill_group(self.proc)
