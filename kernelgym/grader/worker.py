"""A warm grading worker: `harness.py --serve` in the sandbox, started when an episode starts.

It imports torch and triton (without starting CUDA) while the agent works and can prepare the episode's grading
in a forked child (CUDA start, inputs, the baseline's graphs), so submit-to-reward pays only for importing and
running the candidate, which still runs in a process of its own. One worker serves one episode and is stopped
after its grading: anything a candidate does to the worker cannot reach another grading.
"""
from __future__ import annotations

import os
import secrets
import select
import time
import weakref
from pathlib import Path
from typing import Callable

from kernelgym.backends import BACKENDS_DIR
from kernelgym.sandbox import PYTHON, Limits, kill_group, make_sandbox

HARNESS = Path(__file__).resolve().parent / "harness.py"
#: What the candidate's sandbox sees of kernelgym, read-only: the harness, the protocol both sides share, and the
#: language backends the harness loads.
HARNESS_FILES = [HARNESS, HARNESS.parent / "protocol.py", BACKENDS_DIR]
MAX_REPLY_BYTES = 1 << 16  # what is kept of the worker's output while waiting for its reply


class GraderWorker:
    """Owns one `harness.py --serve` process.

    Args:
        root: the grading root (writable inside the sandbox); each request's directory lies under it.
        readonly: paths bound read-only besides `HARNESS_FILES` (the pristine baseline copy, the build cache).
        sandbox: backend name ('bwrap' or 'none'). gpu: pass the GPU in. env: extra variables.
        one_run: the worker exits after its first ``run`` (``--one-run``): for a worker that grades untrusted code.
    """

    def __init__(self, root: Path, readonly: list[Path], sandbox: str, gpu: bool, env: dict[str, str],
                 one_run: bool = False):
        box = make_sandbox(sandbox, root, readonly=[*HARNESS_FILES, *readonly], gpu=gpu,
                           # NVML-based availability check: the worker must not start CUDA before it forks.
                           env={**env, "PYTORCH_NVML_BASED_CUDA_CHECK": "1"})
        # In bwrap the worker has a pid namespace of its own, so it may kill everything else in it after each run
        # (`--kill-others`); never without one (sandbox "none"), where that would be every process of the user.
        argv = [PYTHON, str(HARNESS), "--serve"] + (["--kill-others"] if sandbox == "bwrap" else [])
        argv += ["--one-run"] if one_run else []
        self.proc = box.popen(argv, limits=Limits(timeout_s=24 * 3600))
        # An env that is never closed must not leave its worker (and a prepared child's GPU memory) behind.
        weakref.finalize(self, kill_group, self.proc)

    def _send(self, line: str) -> bool:
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def prepare(self, request_path: Path) -> None:
        """Have a child prepare the request at `request_path` now (no candidate code runs); `request` runs it."""
        self._send(f"prepare {request_path}")

    def alive(self) -> bool:
        """Whether the worker process is still running."""
        return self.proc.poll() is None

    def request(self, request_path: Path, timeout_s: float,
                on_started: Callable[[], None] | None = None) -> tuple[int | None, bool, bool]:
        """Serve one request (prepared or not). Returns (child exit code or None, timed_out, unprepared):
        `unprepared` is True only where the prepared child died before it was ready, so no candidate code ran
        and the request may be served elsewhere. On a timeout the worker is killed (and with it the child).

        Every reply must carry a token sent with this request: a candidate can write to the worker's stdout
        (through bwrap's pid 1) but never saw the token, which the worker read before the candidate started.
        For a prepared request the worker first says ``started`` and waits for our ``go``: after that, no
        ``unprepared`` is taken, so a candidate that stole the token later still cannot buy a second run.
        `on_started` runs between ``started`` and our ``go``: the request is prepared and no candidate code has run
        (an error there is ignored: it must not cost the grading)."""
        token = secrets.token_hex(16)
        if not self.alive() or not self._send(f"run {token} {request_path}"):
            return None, False, False
        # Read raw bytes with the deadline checked on every chunk and the buffer capped: a candidate can reach
        # the worker's stdout through bwrap's pid 1 (/proc/1/fd/1) and write forever without a newline.
        deadline = time.monotonic() + timeout_s
        fd, buf, started = self.proc.stdout.fileno(), b"", False
        marker = f" {token} {request_path}".encode()  # how every reply ends (the path may hold spaces)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                return None, True, False
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:  # the worker died
                return None, False, False
            buf = (buf + chunk)[-MAX_REPLY_BYTES:]
            for line in buf.split(b"\n")[:-1]:
                # The worker writes each reply in one write, but a candidate can put bytes without a newline in front
                # of it (through /proc/1/fd/1): words are read from the end, a kind from its word's end. Only the
                # token authenticates.
                if not line.endswith(marker):
                    continue
                head = line[:-len(marker)].split(b" ")
                if head[-1].endswith(b"started") and not started:
                    started = True
                    if on_started is not None:
                        try:
                            on_started()
                        except Exception:  # noqa: BLE001 - a convenience of the parent's; the grading goes on
                            pass
                    self._send(f"go {token}")
                elif len(head) >= 2 and (head[-2].endswith(b"done") or head[-2].endswith(b"unprepared") and not started):
                    try:
                        return int(head[-1]), False, head[-2].endswith(b"unprepared")
                    except ValueError:
                        pass
            buf = buf.rsplit(b"\n", 1)[-1]

    def stop(self) -> None:
        """Kill the worker's process group (the worker, its children and anything they started)."""
        kill_group(self.proc)
