"""A long-lived sandboxed process outlives the thread that started it (bwrap's --die-with-parent follows the thread:
the grader starts its observed run ahead from a background thread that ends at once)."""
import threading
import time

from kernelgym.sandbox import PYTHON, Limits, kill_group, make_sandbox


def test_a_process_started_from_a_thread_that_ends_lives_on(tmp_path):
    sandbox = make_sandbox("bwrap", tmp_path, gpu=False, env={})
    started = {}

    def start():
        started["proc"] = sandbox.popen([PYTHON, "-c", "import sys; print('up', flush=True); print(sys.stdin.readline())"],
                                        limits=Limits(timeout_s=30))

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
    proc = started["proc"]
    try:
        assert proc.stdout.readline().strip() == "up"
        time.sleep(1.0)  # the starting thread is gone: a parent-death signal would have killed it by now
        assert proc.poll() is None
        proc.stdin.write("go\n")
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
        assert "go" in proc.stdout.read()
    finally:
        kill_group(proc)
