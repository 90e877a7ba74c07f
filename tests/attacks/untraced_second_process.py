"""Attack: a second process runs the library work where the kernel tracer cannot write its trace. The tracer names
each process's trace by its pid and creates it with O_EXCL; where that fails (a file planted at the child's name,
whose pid is predictable in the sandbox's pid namespace; a pid namespace of the child's own, which gives it the
parent's pid; a directory it cannot write) the tracer used to give up quietly and CUDA ran on untraced: no second
trace, so the observer saw one process and none of its kernels.

Defence: `untraced_process_exits` (a process that must be traced, ``KERNELGYM_TRACE_FILE`` set, and cannot create
its trace exits at once, inside ``cuInit``, before any kernel). Honest twin: a process whose trace it can create
goes on and its trace starts with the header (run here without a GPU: CUPTI's own failure is written to the trace).
"""
import os
import subprocess
import sys

import pytest

from kernelgym.grader import tracer

pytestmark = pytest.mark.skipif(tracer.unavailable() is not None, reason=str(tracer.unavailable()))

# The driver calls InitializeInjection at cuInit; here it is called by hand, after the child planted its own name.
CHILD = """
import ctypes, os, sys
prefix = os.environ["KERNELGYM_TRACE_FILE"]
if sys.argv[2] == "plant":
    open(f"{prefix}.{os.getpid()}", "w").write("kernelgym-trace 1 0\\nend 0 0\\n")
ctypes.CDLL(sys.argv[1]).InitializeInjection()
print("CUDA goes on in this process", flush=True)
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KERNELGYM_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        return tracer.build()


def run(library, results, how):
    env = {**os.environ, **tracer.env(library, results)}
    return subprocess.run([sys.executable, "-c", CHILD, str(library), how], env=env, capture_output=True, text=True,
                          timeout=60)


def test_a_process_that_cannot_create_its_trace_runs_nothing(library, tmp_path):
    done = run(library, tmp_path, "plant")
    assert "CUDA goes on" not in done.stdout and done.returncode != 0
    assert "cannot create" in done.stderr


def test_the_honest_twin_goes_on_with_its_trace(library, tmp_path):
    done = run(library, tmp_path, "none")
    assert "CUDA goes on" in done.stdout and done.returncode == 0
    (trace,) = tmp_path.glob(f"{tracer.TRACE_PREFIX}.*")
    assert trace.read_text().startswith(tracer.HEADER)
